#!/usr/bin/env bash
# Lint of the whole repository with ruff, under ruff.toml (pyflakes, pycodestyle and bugbear; 120 columns).
# usage: tools/lint.sh [junit.xml]. Installs its pinned ruff once ($VENVS/ruff, pip --target with the 5.0 venv's
# Python); prints ruff's findings and a line "lint: N findings"; exits non-zero on any. The junit file holds one
# test case (counted by tools/test.sh's summary).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENVS="${ENVFX_VENV_DIR:-$ROOT/.venvs}"
RUFF_PKG="ruff==0.17.6"
PY="$("$ROOT/tools/venv.sh" 5.0)" || exit 1
TOOL="$VENVS/ruff"
if [ ! -f "$TOOL/.envfx-$RUFF_PKG" ]; then
  echo "Installing $RUFF_PKG into $TOOL..." >&2
  rm -rf "$TOOL" && mkdir -p "$TOOL" &&
    "$PY" -m pip install --quiet --disable-pip-version-check --no-compile --target "$TOOL" "$RUFF_PKG" >&2 &&
    touch "$TOOL/.envfx-$RUFF_PKG" || { echo "lint: installing $RUFF_PKG failed"; exit 1; }
fi
cd "$ROOT"
out="$("$TOOL/bin/ruff" check --no-cache --output-format concise . 2>&1)"
rc=$?
[ -n "$out" ] && echo "$out"
findings=$(printf '%s\n' "$out" | grep -cE '^[^ ].*:[0-9]+:[0-9]+: ')
echo "lint: $findings findings"
if [ -n "${1:-}" ]; then
  "$PY" - "$1" "$rc" "$out" <<'PYEOF'
import sys
from xml.sax.saxutils import escape
path, rc, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
failure = f'<failure message="ruff found problems">{escape(out)}</failure>' if rc else ""
with open(path, "w") as fh:
    fh.write(f'<testsuite name="lint" tests="1" failures="{1 if rc else 0}" errors="0" skipped="0">'
             f'<testcase classname="lint" name="ruff">{failure}</testcase></testsuite>\n')
PYEOF
fi
exit $rc

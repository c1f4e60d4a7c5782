#!/bin/sh
# Regenerate tests/conformance/expected_cpu.txt (the conformance ratchet) from a CPU run.
# usage: tests/conformance/update_expected.sh [BUILD_DIR]   (default: build)
# Review the diff before committing: a test that disappears from the list no longer passes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
tool="$build/bin/netrun-conformance"
[ -x "$tool" ] || { echo "update_expected.sh: no $tool: build first (or give the build folder)" >&2; exit 2; }
python3 "$here/run_conformance.py" --tool "$tool" --backend cpu --cache "$build/onnx-node-tests" \
    --jobs "${JOBS:-2}" --timeout 30 --table none --write-expected "$here/expected_cpu.txt"

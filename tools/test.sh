#!/usr/bin/env bash
# README command B: set everything up, build, and run the whole test suite (then again under ASan+UBSan).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh --tests
PY="$PWD/.venv/bin/python"
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$PY" >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
if [ "${NETRUN_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== the same suite under AddressSanitizer + UndefinedBehaviorSanitizer =="
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNETRUN_SANITIZE=ON -DPython3_EXECUTABLE="$PY" >/dev/null
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi

#!/usr/bin/env bash
# README command A: set everything up, build, and run netrun on the bundled example model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DNETRUN_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "$(nproc)"
build/bin/netrun examples/tiny_cnn.onnx "$@"

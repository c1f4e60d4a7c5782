#!/usr/bin/env bash
# README command A: set everything up, build, and run netrun on the bundled example model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
# The CUDA plugin is built only where a GPU can run it: compiling its kernels takes minutes, and without a GPU the
# example runs on the CPU anyway (tools/test.sh and a plain cmake build it wherever nvcc is found).
cuda=ON
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  cuda=OFF
  echo "example: no NVIDIA GPU visible: the CUDA plugin is not built (-DNETRUN_CUDA=OFF)"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DNETRUN_BUILD_TESTS=OFF -DNETRUN_CUDA=$cuda
cmake --build build -j "$(nproc)"
build/bin/netrun examples/tiny_cnn.onnx "$@"

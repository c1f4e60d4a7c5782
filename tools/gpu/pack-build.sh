#!/usr/bin/env bash
# Build netrun here for the GPU machine (Release, sm_90, CUDA + OpenCL plugins; oneDNN left out so the CPU
# plugin needs nothing the machine lacks) and gather what tools/gpu/run-gpu-tests.sh runs into one folder to
# carry: bin/, lib/ (libnetrun, plugins), lib/extra/ (CLBlast and stb, which the machine lacks), tests/ (the CUDA test
# programs). Saves the device's build minutes; protobuf-c and OpenBLAS still come from .deps (pack-deps.sh).
# usage: tools/gpu/pack-build.sh [OUT_DIR (default build-gpu-pkg)]   then, on the device:
#   BUILD=$PWD/build-gpu-pkg STAGES="compare conformance models opencl" tools/gpu/run-gpu-tests.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PKG=${1:-$ROOT/build-gpu-pkg}
B=${BUILD_DIR:-$ROOT/build-gpu}   # the build folder (BUILD_DIR: one per engineer)
cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DNETRUN_CPU_DNNL=OFF >/dev/null
ninja -C "$B" -j "${JOBS:-2}" netrun netrun-cli netrun-conformance netrun-cpu netrun-cuda netrun-opencl test_cuda_runtime \
  test_rel_concurrency >/dev/null
rm -rf "$PKG" && mkdir -p "$PKG/bin" "$PKG/lib/extra" "$PKG/tests"
cp "$B/bin/netrun" "$B/bin/netrun-conformance" "$PKG/bin/"
cp -a "$B"/lib/libnetrun.so* "$PKG/lib/"
mkdir -p "$PKG/lib/netrun/backends"
cp "$B"/lib/netrun/backends/libnetrun-{cpu,cuda,opencl}.so "$PKG/lib/netrun/backends/"
cp "$B/tests/test_cuda_runtime" "$B/tests/test_rel_concurrency" "$PKG/tests/"
cp -L /usr/lib/x86_64-linux-gnu/libclblast.so.1 /usr/lib/x86_64-linux-gnu/libstb.so.0 "$PKG/lib/extra/"
du -sh "$PKG"

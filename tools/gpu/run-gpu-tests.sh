#!/usr/bin/env bash
# Build netrun on the GPU machine and run the CUDA tests; logs go to ${OUT:-/tmp/gpu-out} (at most 8 files, so
# they all come back from the device tool):
#   summary.txt             machine, toolkit, `netrun --backends`, and the last lines of every stage
#   build.log               cmake + ninja
#   compare.log             tests/cuda/compare_backends.py: every op test case, cuda --strict vs cpu
#   ops_cuda_cpu.log        tests/ops/run_op_tests.py --backend cuda,cpu (vs onnxruntime)
#   conformance_cuda.log / conformance_cuda_cpu.log / conformance_cuda.json   ONNX node tests
#   models.log              tests/models with --backend cuda,cpu
# The machine lacks protobuf-c (and maybe OpenBLAS): run tools/gpu/pack-deps.sh here first and carry ".deps".
# usage: tools/gpu/run-gpu-tests.sh            (from anywhere; the repo is this script's ../..)
# Environment: OUT (log folder), BUILD (default /tmp/netrun-build-gpu), JOBS (default nproc),
#   STAGES (default "build compare conformance models"; "ops" adds the serial, slow run_op_tests.py pass), CONF_FILTER (regex for the conformance runs,
#   default all tests), CONF_TIMEOUT_S (per conformance run, default 280), CUDA_ARCH (default 90).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/gpu-out}
BUILD=${BUILD:-/tmp/netrun-build-gpu}
JOBS=${JOBS:-$(nproc)}
STAGES=${STAGES:-build compare conformance models}
CONF_TIMEOUT_S=${CONF_TIMEOUT_S:-280}
mkdir -p "$OUT"
S=$OUT/summary.txt
: >"$S"
say() { echo "$@" | tee -a "$S"; }
has() { case " $STAGES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
tailto() { say "---- $1 (last lines of $(basename "$2"))"; tail -n "${3:-15}" "$2" | tee -a "$S"; }

say "== machine"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1; nvcc --version 2>&1 | tail -1;
  cmake --version 2>&1 | head -1; ninja --version 2>&1; python3 --version 2>&1;
  python3 -c 'import onnx, onnxruntime; print("onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)' 2>&1; } | tee -a "$S"

# ---- dependencies the image lacks ----
if ! command -v protoc-c >/dev/null || [ ! -f /usr/include/protobuf-c/protobuf-c.h ]; then
  if [ -f "$REPO/.deps/deps.tar.gz" ]; then
    D=/tmp/netrun-deps
    rm -rf "$D" && mkdir -p "$D" && tar -C "$D" -xzf "$REPO/.deps/deps.tar.gz"
    export CMAKE_PREFIX_PATH="$D/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export PATH="$D/usr/bin:$PATH"
    # protobuf-c, OpenBLAS and its Fortran runtime only (never libstdc++: python's modules need the newer one)
    export LD_LIBRARY_PATH="$D/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    say "deps: unpacked .deps/deps.tar.gz into $D"
  else
    say "deps: protoc-c missing and no .deps/deps.tar.gz: run tools/gpu/pack-deps.sh and carry .deps"
  fi
fi
# cuDNN: the toolkit's, the system's, or the nvidia-cudnn pip package's
CUDNN_ARG=""
have_cudnn=0
for h in /usr/local/cuda/include/cudnn.h /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h; do
  [ -f "$h" ] && have_cudnn=1
done
if [ $have_cudnn = 0 ]; then
  P=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  if [ -n "$P" ] && [ -f "$P/include/cudnn.h" ]; then
    CUDNN_ARG="-DCUDNN_ROOT=$P"
    export LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    say "cudnn: pip package at $P"
  else
    say "cudnn: not found (cudnn.h)"
  fi
fi

NETRUN=$BUILD/bin/netrun
export NETRUN_BACKEND_PATH=$BUILD/lib/netrun/backends

if has build; then
  say "== build ($BUILD, sm_${CUDA_ARCH:-90}, $JOBS jobs)"
  t0=$(date +%s)
  { cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
      $CUDNN_ARG && ninja -C "$BUILD" -j "$JOBS"; } >"$OUT/build.log" 2>&1
  rc=$?
  say "build exit $rc in $(( $(date +%s) - t0 )) s"
  grep -E "netrun: cuda|warning:|error" "$OUT/build.log" | head -20 | tee -a "$S"
  [ $rc -eq 0 ] || { tailto build "$OUT/build.log" 40; exit 1; }
fi

say "== netrun --backends"
"$NETRUN" --backends 2>&1 | tee -a "$S"

if has compare; then
  t0=$(date +%s)
  python3 "$REPO/tests/cuda/compare_backends.py" --netrun "$NETRUN" --jobs "$JOBS" --require-device \
    >"$OUT/compare.log" 2>&1
  say "compare exit $? in $(( $(date +%s) - t0 )) s"
  grep -E "^FAIL" "$OUT/compare.log" | head -40 | tee -a "$S"
  tailto compare "$OUT/compare.log" 1
fi

if has ops; then
  t0=$(date +%s)
  python3 "$REPO/tests/ops/run_op_tests.py" --netrun "$NETRUN" --backend cuda,cpu >"$OUT/ops_cuda_cpu.log" 2>&1
  say "ops (cuda,cpu vs onnxruntime) exit $? in $(( $(date +%s) - t0 )) s"
  grep -E "^FAIL" "$OUT/ops_cuda_cpu.log" | head -30 | tee -a "$S"
  tailto ops "$OUT/ops_cuda_cpu.log" 1
fi

if has conformance; then
  if [ -f "$REPO/.deps/node-tests.tar.gz" ] && [ ! -d "$BUILD/onnx-node-tests/node" ]; then
    mkdir -p "$BUILD/onnx-node-tests" && tar -C "$BUILD/onnx-node-tests" -xzf "$REPO/.deps/node-tests.tar.gz"
  fi
  NODE=$(python3 "$REPO/tests/conformance/run_conformance.py" --tool "$BUILD/bin/netrun-conformance" \
           --cache "$BUILD/onnx-node-tests" --print-dir 2>/dev/null | tail -1)
  F=()
  [ -n "${CONF_FILTER:-}" ] && F=(--filter "$CONF_FILTER")
  for be in cuda cuda,cpu; do
    tag=${be/,/_}
    t0=$(date +%s)
    extra=()
    [ "$be" = cuda ] && extra=(--json "$OUT/conformance_cuda.json")
    timeout "$CONF_TIMEOUT_S" "$BUILD/bin/netrun-conformance" --backend "$be" --jobs "$JOBS" --timeout 60 \
      --skip "$REPO/tests/conformance/skip.txt" --table failing "${F[@]}" "${extra[@]}" "$NODE" \
      >"$OUT/conformance_$tag.log" 2>&1
    say "conformance --backend $be exit $? in $(( $(date +%s) - t0 )) s"
    tailto "conformance $be" "$OUT/conformance_$tag.log" 6
  done
fi

if has models; then
  t0=$(date +%s)
  { python3 "$REPO/tests/models/build_models.py" "$BUILD/test-models" &&
    python3 "$REPO/tests/models/run_model_tests.py" --netrun "$NETRUN" --models "$BUILD/test-models" \
      --backend cuda,cpu --rtol 1e-3 --atol 1e-3; } >"$OUT/models.log" 2>&1
  say "models (cuda,cpu) exit $? in $(( $(date +%s) - t0 )) s"
  tailto models "$OUT/models.log" 15
fi
say "== done; logs in $OUT"

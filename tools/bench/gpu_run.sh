#!/usr/bin/env bash
# One GPU-machine session for the fp16 / convolution work: build only what the benchmark needs (CLI, cpu and
# cuda plugins), compare the conv and gemm op tests between cuda and cpu, then run tools/bench/gpu_bench.py.
# Logs go to ${OUT:-/tmp/gpu-out}. Needs .deps carried (tools/gpu/pack-deps.sh), as tools/gpu/run-gpu-tests.sh.
# Environment: BENCH_ARGS (extra gpu_bench.py arguments), BENCH_TIMEOUT_S (default 300), SKIP_COMPARE=1, SKIP_CHECK=1,
# CHECK_TIMEOUT_S (default 90), CHECK_ARGS, PROFILE_BATCHES (default "32 1"). Also runs tools/bench/gpu_fp16_check.py and a per-op profile of ResNet-50.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/gpu-out}
BUILD=${BUILD:-/tmp/netrun-build-gpu}
mkdir -p "$OUT"
t0=$(date +%s)
if [ -f "$REPO/.deps/deps.tar.gz" ] && ! command -v protoc-c >/dev/null; then
  D=/tmp/netrun-deps
  rm -rf "$D" && mkdir -p "$D" && tar -C "$D" -xzf "$REPO/.deps/deps.tar.gz"
  export CMAKE_PREFIX_PATH="$D/usr" PATH="$D/usr/bin:$PATH" LD_LIBRARY_PATH="$D/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
CUDNN_ARG=""
if [ ! -f /usr/local/cuda/include/cudnn.h ] && [ ! -f /usr/include/cudnn.h ] && [ ! -f /usr/include/x86_64-linux-gnu/cudnn.h ]; then
  P=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  [ -n "$P" ] && CUDNN_ARG="-DCUDNN_ROOT=$P" && export LD_LIBRARY_PATH="$P/lib:${LD_LIBRARY_PATH:-}"
fi
{ cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 $CUDNN_ARG \
    -DNETRUN_OPENCL=OFF && ninja -C "$BUILD" -j "$(nproc)" netrun-cli netrun-cpu netrun-cuda; } >"$OUT/build.log" 2>&1
rc=$?
echo "build exit $rc in $(( $(date +%s) - t0 )) s"
[ $rc -eq 0 ] || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
NETRUN=$BUILD/bin/netrun
export NETRUN_BACKEND_PATH=$BUILD/lib/netrun/backends
"$NETRUN" --backends 2>&1 | grep -i cuda
if [ "${SKIP_COMPARE:-0}" != 1 ]; then
  t1=$(date +%s)
  for fam in conv gemm; do
    python3 "$REPO/tests/ops/compare_backends.py" --netrun "$NETRUN" --backend cuda --family $fam --jobs "$(nproc)" --require-device
  done >"$OUT/compare.log" 2>&1
  echo "compare (conv, gemm) in $(( $(date +%s) - t1 )) s:"; grep -E "^FAIL|passed|failed" "$OUT/compare.log" | tail -12
fi
if [ "${SKIP_CHECK:-0}" != 1 ]; then
  t1=$(date +%s)
  PYTHONUNBUFFERED=1 timeout "${CHECK_TIMEOUT_S:-90}" python3 "$REPO/tools/bench/gpu_fp16_check.py" --netrun "$NETRUN" \
    --work /tmp/gpucheck ${CHECK_ARGS:-} >"$OUT/check.log" 2>&1
  echo "fp16 check exit $? in $(( $(date +%s) - t1 )) s"; grep -v Warning "$OUT/check.log" | grep -v "torch.onnx.export" | tail -40
fi
if [ -f /tmp/gpucheck/resnet50.onnx ]; then  # where the time goes (per op), fp32 batch 32 and batch 1
  for b in ${PROFILE_BATCHES:-32 1}; do
    "$NETRUN" /tmp/gpucheck/resnet50.onnx --backend cuda --batch $b --iterations 5 --profile 2>&1 | sed -n '/^Profile/,$p' | grep -A14 "BY OP"
  done >"$OUT/profile.log" 2>&1
  cat "$OUT/profile.log"
fi
t2=$(date +%s)
PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT_S:-300}" python3 "$REPO/tools/bench/gpu_bench.py" --netrun "$NETRUN" \
  --work /tmp/gpubench --md "$OUT/bench.md" --json "$OUT/bench.json" ${BENCH_ARGS:-} >"$OUT/bench.log" 2>&1
echo "bench exit $? in $(( $(date +%s) - t2 )) s"
grep -v '^{' "$OUT/bench.log" | tail -60
# the per-layer fp16 decisions on ResNet-50 batch 32
[ "${SKIP_DECISIONS:-0}" != 1 ] && [ -f /tmp/gpubench/resnet50.onnx ] && NETRUN_LOG_LEVEL=info "$NETRUN" /tmp/gpubench/resnet50.onnx --backend cuda \
  --batch 32 --precision fp16 --iterations 5 >"$OUT/fp16_resnet50_b32.log" 2>&1
exit 0

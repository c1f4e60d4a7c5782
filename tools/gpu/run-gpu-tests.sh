#!/usr/bin/env bash
# Build netrun on the GPU machine as a user would (a clean clone of the commit, this machine's compiler, CUDA and
# cuDNN) and run the CUDA tests; logs go to ${OUT:-/tmp/gpu-out} (at most 8 files, so they all come back from
# the device tool):
#   summary.txt             machine, toolkit, the commit built, compiler and cuDNN (headers and the library
#                           loaded), `netrun --backends`, the exports check, and the last lines of every stage
#   build.log               git clone + cmake + ninja
#   compare.log             tests/ops/compare_backends.py: every op test case, cuda --strict vs cpu
#   ops_cuda_cpu.log        tests/ops/run_op_tests.py --backend cuda,cpu (vs onnxruntime)
#   conformance_cuda.log / conformance_cuda_cpu.log / conformance_cuda.json   ONNX node tests
#   native_ratchet_cuda.log  the tests of tests/conformance/expected_cuda.txt must pass with every node on cuda
#   models.log              tests/models with --backend cuda,cpu at fp32, tf32 and fp16, tests/passes with --backend
#                           cuda,cpu, tests/passes/test_fp16_regions.py
#   zoo.log                 stage zoo: tests/cuda/model_zoo.py, ~20 real networks (torchvision, transformers, a U-Net,
#                           3-D convs) exported here with random weights, --backend cuda at fp32/tf32/fp16 against
#                           --backend cpu (ZOO_MODELS, ZOO_PRECISIONS narrow it)
#   cudart.log              stage cudart: probe cost, tests/cuda/test_cuda_runtime, 8-thread concurrency on cuda,
#                           two processes on one GPU, CUDA Graphs on/off and pinned on/off timings and outputs
#   pipeline.log            stage pipeline: tools/bench/pipeline_bench.py (1080p frames on the GPU -> ImagePreprocess ->
#                           ResNet-50 / a YOLO-sized net; host round trip and PyTorch rows; PIPELINE_MODELS, _BATCHES)
#   devio.log               stage devio: device memory inputs/outputs and the caller's stream on cuda: the C API with
#                           cudaMalloc memory (tests/device_io/test_device_io_cuda.py: PCIe bytes 0 on a ResNet-like
#                           model, pointer changes under CUDA Graphs, misuse), the gpu_frames example, and the Python
#                           package with torch CUDA tensors (tests/python/test_device_io.py, test_cuda.py)
#   attention.log           stage attention: the transformer op cases cuda vs cpu (tests/ops/compare_backends.py
#                           --family transformer) and tools/gpu/attention_check.py (Attention's cuBLAS path against
#                           the simple kernel: latency and output difference on BERT-sized, GQA and long models)
#   matmul_bias.log         stage matmul_bias: the graph passes' MatMulBias on cuda: the Linear-layer op cases (tests/ops/
#                           compare_backends.py --family gemm --filter linear_: ranks 2-4, bias, Relu, tanh/erf Gelu,
#                           the residual Add as a 4th input, fp32/fp16, odd N/K) cuda vs cpu, and
#                           tools/gpu/matmul_bias_check.py (ViT-B/16 batch 32, BERT-base and GPT-2 small batch 8 at
#                           fp16/tf32/fp32: fused vs graph.fuse_matmul_bias=0, latency, output difference and the
#                           count of residual Adds taken (res); MMB_MODELS, MMB_PRECISIONS narrow it)
#   rmsnorm.log             stage rmsnorm: the graph pass's RMSNormalization on cuda: tools/gpu/rmsnorm_check.py
#                           (T5- and LLaMA-shaped blocks, d 512 and 4096, fused vs graph.fuse_transformer=0 at fp32
#                           and fp16 against the CPU's float32: node counts, the norms inside the float16 region,
#                           output difference, latency) and tools/bench/rmsnorm_bench.py --backend cuda (norms
#                           alone, fused vs unfused); the RMSNormalization op cases are in stage attention
#   int8.log                stage int8: QLinearConv / QLinearMatMul on cuda: the op cases cuda vs cpu
#                           (compare_backends.py --family quantize --filter QL) and tests/cpu/test_int8_qdq.py
#                           --backend cuda (QDQ models quantized by onnxruntime, against onnxruntime's CPU run)
#   opencl.log              stage opencl: the OpenCL backend on the NVIDIA GPU (an ICD file for
#                           libnvidia-opencl.so.1 in a vendors folder of our own): device listing, op cases vs cpu,
#                           model tests, ResNet-50 batch 1 opencl vs cuda, first start vs cached second start
# The machine lacks protobuf-c (and maybe OpenBLAS): run tools/gpu/pack-deps.sh here first and carry ".deps".
# usage: tools/gpu/run-gpu-tests.sh            (from anywhere; the repo is this script's ../..)
# The build stage clones CLONE_FROM (default: this repository; a git bundle works too, e.g. one carried to the
# machine: git bundle create .gpu/head.bundle HEAD) into $BUILD/src and builds that commit: uncommitted changes
# are not part of it, and the scripts of the tests then come from that clone too.
# Environment: OUT (log folder), BUILD (default /tmp/netrun-build-gpu), JOBS (default nproc),
#   STAGES (default "build compare conformance models zoo"; the build stage wipes $BUILD first; "ops" adds the serial, slow run_op_tests.py pass; "pipeline" the pipeline benchmark; "attention" the Attention checks (attention.log); "matmul_bias" the MatMulBias checks (matmul_bias.log); "rmsnorm" the RMSNorm fusion checks (rmsnorm.log); "int8" the QLinearConv / QLinearMatMul checks (int8.log); "cudart"
#   the runtime-feature checks, CONC_RUNS runs per thread, BENCH_MODELS torchvision names), CONF_FILTER (regex for the conformance runs,
#   default all tests), CONF_TIMEOUT_S (per conformance run, default 280), CONF_BACKENDS (default "cuda cuda,cpu"),
#   COMPARE_TIMEOUT_S (default 1200), COMPARE_ARGS (more compare_backends.py
#   arguments, e.g. "--family elementwise --filter Mod"), CUDA_ARCH (default: CMake's, the GPUs nvidia-smi lists),
#   CMAKE_ARGS (more configure arguments, e.g. -DNETRUN_TRITON=ON for tools/gpu/run-triton-gpu.sh with NB=$BUILD).
# Without "build" in STAGES, BUILD must hold a build made elsewhere (e.g. carried: see tools/gpu/pack-build.sh);
# libraries it needs that the machine lacks (CLBlast) go in $BUILD/lib/extra. The summary then says so: a carried
# build is a shortcut, never the only check (its compiler and cuDNN headers are another machine's).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SRC_REPO=$REPO
OUT=${OUT:-/tmp/gpu-out}
BUILD=${BUILD:-/tmp/netrun-build-gpu}
JOBS=${JOBS:-$(nproc)}
STAGES=${STAGES:-build compare conformance models zoo}
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
    export PKG_CONFIG_PATH="$D/usr/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
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
[ -d "$BUILD/lib/extra" ] && export LD_LIBRARY_PATH="$BUILD/lib/extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if has build; then
  say "== build ($BUILD, architectures ${CUDA_ARCH:-those of the GPUs here}, $JOBS jobs) from a clean clone of ${CLONE_FROM:-$REPO}"
  t0=$(date +%s)
  rm -rf "$BUILD" && mkdir -p "$BUILD"
  if ! git clone -q "${CLONE_FROM:-$REPO}" "$BUILD/src" >"$OUT/build.log" 2>&1; then
    say "build: git clone of ${CLONE_FROM:-$REPO} failed"; tailto build "$OUT/build.log" 10; exit 1
  fi
  REPO=$BUILD/src
  say "commit: $(git -C "$REPO" log -1 --format='%H %cd %s' --date=iso | cut -c1-160)"
  [ -n "$(git -C "$SRC_REPO" status --porcelain --untracked-files=no 2>/dev/null)" ] &&
    say "note: $SRC_REPO has uncommitted changes; they are not in this build"
  # shellcheck disable=SC2086
  { cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CUDA_ARCH:+-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH} \
      $CUDNN_ARG ${CMAKE_ARGS:-} && ninja -C "$BUILD" -k 0 -j "$JOBS"; } >>"$OUT/build.log" 2>&1
  rc=$?
  # a target of another backend failing (e.g. opencl) need not stop the CUDA checks
  [ $rc -ne 0 ] && [ -x "$NETRUN" ] && [ -f "$NETRUN_BACKEND_PATH/libnetrun-cuda.so" ] && {
    say "build: some targets failed (see build.log); netrun and the cuda plugin exist, going on"; rc=0; }
  say "build exit $rc in $(( $(date +%s) - t0 )) s"
  grep -E "netrun: cuda|warning:|error" "$OUT/build.log" | head -20 | tee -a "$S"
  [ $rc -eq 0 ] || { tailto build "$OUT/build.log" 40; exit 1; }
else
  say "== no build stage: testing the build in $BUILD as it is (made elsewhere?): a shortcut, not the check users get"
fi
# What the build was made with: the compilers (C, and CUDA's host compiler, which links nothing C++ into the
# plugin since it is linked as C), the cuDNN headers it was compiled against; the cuDNN it loads is in the cuda
# line of `netrun --backends` below.
cache_get() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt" 2>/dev/null | head -1; }
if [ -f "$BUILD/CMakeCache.txt" ]; then
  cc=$(cache_get CMAKE_C_COMPILER) hcxx=$(cache_get CMAKE_CUDA_HOST_COMPILER) inc=$(cache_get CUDNN_INCLUDE_DIR)
  say "compiler: C $cc ($("$cc" --version 2>/dev/null | head -1)); CUDA host ${hcxx:-the nvcc default} ($("${hcxx:-c++}" --version 2>/dev/null | head -1))"
  ver=$(grep -hE "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) " "$inc"/cudnn_version*.h 2>/dev/null | head -3 | awk '{print $3}' | paste -sd.)
  say "cuDNN headers: $inc (version ${ver:-unknown})"
fi
say "== exports (tools/check-exports.sh)"
bash "$REPO/tools/check-exports.sh" --lib "$BUILD/lib/libnetrun.so" --plugins "$BUILD/lib/netrun/backends" 2>&1 | tee -a "$S"

say "== netrun --backends"
"$NETRUN" --backends 2>&1 | tee -a "$S"

if has cudart; then
  L=$OUT/cudart.log
  : >"$L"
  t0=$(date +%s)
  {
    echo "== probe cost (netrun --backends), 3 runs"
    for i in 1 2 3; do /usr/bin/time -f "%e s elapsed, %M KiB max RSS" "$NETRUN" --backends >/dev/null; done
    echo "== test_cuda_runtime"
    python3 "$REPO/tests/cuda/make_models.py" "$BUILD/cuda-models" &&
      "$BUILD/tests/test_cuda_runtime" "$REPO/examples/tiny_cnn.onnx" "$BUILD/cuda-models/dyn_gather.onnx"
    echo "test_cuda_runtime exit $?"
    echo "== concurrency: 8 threads x ${CONC_RUNS:-1000} runs, a cuda session each"
    REL_RUNS=${CONC_RUNS:-1000} "$BUILD/tests/test_rel_concurrency" --backend cuda
    echo "concurrency exit $?"
    echo "== two processes on the GPU at once (tiny_cnn, 3 s each)"
    "$NETRUN" "$REPO/examples/tiny_cnn.onnx" --backend cuda --strict --duration 3 -q >"$BUILD/p1.txt" 2>&1 &
    p1=$!
    "$NETRUN" "$REPO/examples/tiny_cnn.onnx" --backend cuda --strict --duration 3 -q >"$BUILD/p2.txt" 2>&1
    r2=$?
    wait $p1
    echo "process exits: $? $r2"
    echo "== CUDA Graphs and pinned copies: median latency, outputs compared (cmp)"
    python3 "$REPO/tests/cuda/export_torchvision.py" "$BUILD/tv" ${BENCH_MODELS:-resnet50 mobilenet_v2} 2>&1 | grep -v Warning
    for m in "$REPO/examples/tiny_cnn.onnx" "$BUILD"/tv/*.onnx; do
      n=$(basename "$m" .onnx)
      for mode in graphs eager nopinned; do
        extra=()
        [ $mode = eager ] && extra=(--no-cuda-graph)
        [ $mode = nopinned ] && extra=(--set cuda.pinned=0)
        rm -rf "$BUILD/out-$n-$mode"
        "$NETRUN" "$m" --backend cuda,cpu --seed 1 --warmup 20 --iterations 300 "${extra[@]}" \
          --output-dir "$BUILD/out-$n-$mode" >"$BUILD/run-$n-$mode.txt" 2>&1
        echo "$n $mode exit $?: $(grep -E 'median' "$BUILD/run-$n-$mode.txt" | xargs) | $(grep -E 'peak device' "$BUILD/run-$n-$mode.txt" | xargs)"
      done
      for f in "$BUILD/out-$n-graphs"/*; do
        cmp -s "$f" "$BUILD/out-$n-eager/$(basename "$f")" && echo "$n $(basename "$f"): graphs == eager (bitwise)" ||
          echo "$n $(basename "$f"): graphs and eager DIFFER"
      done
    done
    "$NETRUN" "$REPO/examples/tiny_cnn.onnx" --backend cuda --strict --device-memory 4K -q; echo "--device-memory 4K exit $?"
  } >>"$L" 2>&1
  say "cudart stage in $(( $(date +%s) - t0 )) s"
  cat "$L" >>"$S"
fi

if has compare; then
  t0=$(date +%s)
  timeout "${COMPARE_TIMEOUT_S:-1200}" python3 "$REPO/tests/ops/compare_backends.py" --netrun "$NETRUN" --backend cuda --jobs "$JOBS" \
    --require-device ${COMPARE_ARGS:-} >"$OUT/compare.log" 2>&1
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
  if [ -f "$SRC_REPO/.deps/node-tests.tar.gz" ] && [ ! -d "$BUILD/onnx-node-tests/node" ]; then
    mkdir -p "$BUILD/onnx-node-tests" && tar -C "$BUILD/onnx-node-tests" -xzf "$SRC_REPO/.deps/node-tests.tar.gz"
  fi
  NODE=$(python3 "$REPO/tests/conformance/run_conformance.py" --tool "$BUILD/bin/netrun-conformance" \
           --cache "$BUILD/onnx-node-tests" --print-dir 2>/dev/null | tail -1)
  F=()
  [ -n "${CONF_FILTER:-}" ] && F=(--filter "$CONF_FILTER")
  for be in ${CONF_BACKENDS:-cuda cuda,cpu}; do
    tag=${be/,/_}
    t0=$(date +%s)
    extra=()
    [ "$be" = cuda ] && extra=(--json "$OUT/conformance_cuda.json")
    # CONF_VERBOSE=1: a line per finished test, so a run cut off by CONF_TIMEOUT_S still counts
    [ -n "${CONF_VERBOSE:-}" ] && extra+=(-v)
    timeout "$CONF_TIMEOUT_S" "$BUILD/bin/netrun-conformance" --backend "$be" --jobs "$JOBS" --timeout 60 \
      --skip "$REPO/tests/conformance/skip.txt" --table failing "${F[@]}" "${extra[@]}" "$NODE" \
      >"$OUT/conformance_$tag.log" 2>&1
    say "conformance --backend $be exit $? in $(( $(date +%s) - t0 )) s"
    [ -n "${CONF_VERBOSE:-}" ] && say "  lines per status: $(grep -oE '^(passed|failed|error|skipped|unsupported|fallback|timeout|crash)[a-z_]* ' \
      "$OUT/conformance_$tag.log" | sort | uniq -c | xargs)"
    tailto "conformance $be" "$OUT/conformance_$tag.log" 6
  done
  # the whole suite on cuda: every test listed in tests/conformance/expected_cuda.txt must pass with all nodes on
  # cuda, and at least CONF_MIN_NATIVE (default 1200) do (a filtered run is not checked)
  if [ -z "${CONF_FILTER:-}" ] && [ -f "$OUT/conformance_cuda.json" ]; then
    python3 "$REPO/tests/opencl/native_ratchet.py" --from-json "$OUT/conformance_cuda.json" --backend cuda \
      --expected "$REPO/tests/conformance/expected_cuda.txt" --min "${CONF_MIN_NATIVE:-1200}" \
      >"$OUT/native_ratchet_cuda.log" 2>&1
    say "native ratchet cuda exit $?"
    tailto "native ratchet cuda" "$OUT/native_ratchet_cuda.log" 4
  fi
fi

if has models; then
  t0=$(date +%s)
  python3 "$REPO/tests/models/build_models.py" "$BUILD/test-models" >"$OUT/models.log" 2>&1
  # fp32 as tight as the CPU's tests; tf32 and fp16 round the inputs of every product (10 bits of mantissa)
  # detectors keep the boxes whose scores pass a threshold and NMS: under tf32 / fp16 the scores move by a few
  # 1e-3 and another box may survive (a different answer, not a wrong one), so they are compared in float32 only
  for pt in "fp32 1e-3 1e-3" "tf32 2e-2 2e-2 det_" "fp16 5e-2 5e-2 det_"; do
    set -- $pt
    echo "== tests/models --backend cuda,cpu --precision $1 (rtol $2, atol $3)" >>"$OUT/models.log"
    python3 "$REPO/tests/models/run_model_tests.py" --netrun "$NETRUN" --models "$BUILD/test-models" \
      --backend cuda,cpu --rtol "$2" --atol "$3" --skip "${4:-}" --arg=--precision --arg="$1" >>"$OUT/models.log" 2>&1
    say "models (cuda,cpu, $1) exit $? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/models.log")"
  done
  grep -E "^FAIL" "$OUT/models.log" | head -20 | tee -a "$S"
  # the graph passes' fused models (BN folding, Conv + Add + activation, SiLU -> Swish) with the nodes on cuda
  python3 "$REPO/tests/passes/test_passes.py" --lib "$BUILD/lib/libnetrun.so" --backend cuda,cpu >>"$OUT/models.log" 2>&1
  say "passes (cuda,cpu) exit $?"
  tailto passes "$OUT/models.log" 2
  # --precision fp16: the float16 NHWC region pass and its internal ops on cuda against the CPU in float32
  python3 "$REPO/tests/passes/test_fp16_regions.py" --lib "$BUILD/lib/libnetrun.so" >>"$OUT/models.log" 2>&1
  say "fp16 regions (cuda) exit $?"
  tailto "fp16 regions" "$OUT/models.log" 3
fi
if has zoo; then
  t0=$(date +%s)
  python3 "$REPO/tests/cuda/model_zoo.py" --netrun "$NETRUN" --out "$BUILD/zoo" --backend cuda \
    ${ZOO_MODELS:+--models "$ZOO_MODELS"} --precisions "${ZOO_PRECISIONS:-fp32,tf32,fp16}" \
    --json "$OUT/zoo.json" >"$OUT/zoo.log" 2>&1
  say "zoo (cuda vs cpu) exit $? in $(( $(date +%s) - t0 )) s"
  cat "$OUT/zoo.log" | tee -a "$S" >/dev/null
fi
if has pipeline; then
  # frames in GPU memory -> ImagePreprocess -> ResNet-50 / a YOLO-sized net -> outputs on the GPU, against host
  # round trips and PyTorch (eager, CUDA graph); needs the Python package of the build ($BUILD/python)
  t0=$(date +%s)
  timeout "${PIPELINE_TIMEOUT_S:-900}" python3 "$REPO/tools/bench/pipeline_bench.py" --build "$BUILD" \
    --models "${PIPELINE_MODELS:-resnet50,yolo}" --batches "${PIPELINE_BATCHES:-1,8}" \
    --json "$BUILD/pipeline.json" >"$OUT/pipeline.log" 2>&1
  say "pipeline exit $? in $(( $(date +%s) - t0 )) s"
  grep -vE "Warning|warn\(" "$OUT/pipeline.log" | tail -n 60 | tee -a "$S" >/dev/null
fi
if has devio; then
  L=$OUT/devio.log
  : >"$L"
  t0=$(date +%s)
  python3 "$REPO/tests/device_io/test_device_io_cuda.py" --lib "$BUILD/lib/libnetrun.so" >>"$L" 2>&1
  say "devio C API on cuda exit $?"
  NETRUN_BACKEND_PATH="$BUILD/lib/netrun/backends" "$BUILD/bin/gpu_frames" "$REPO/examples/tiny_cnn.onnx" 64 >>"$L" 2>&1
  say "devio gpu_frames exit $?"
  if [ -d "$BUILD/python/netrun" ]; then
    PYTHONPATH="$BUILD/python" python3 -m pytest -q -p no:cacheprovider -rs "$REPO/tests/python/test_device_io.py" \
      "$REPO/tests/python/test_cuda.py" >>"$L" 2>&1
    say "devio python (torch) exit $?"
  else
    say "devio python: no $BUILD/python (Python headers missing at build time?)"
  fi
  say "devio stage in $(( $(date +%s) - t0 )) s"
  grep -E "^FAIL|^E |SKIP|passed|failed" "$L" | head -30 | tee -a "$S"
fi
if has attention; then
  L=$OUT/attention.log
  t0=$(date +%s)
  python3 "$REPO/tests/ops/compare_backends.py" --netrun "$NETRUN" --backend cuda --family transformer --jobs "$JOBS" \
    --require-device >"$L" 2>&1
  say "attention: transformer op cases (cuda vs cpu) exit $?"
  grep -E "^FAIL" "$L" | head -20 | tee -a "$S"
  tailto "attention cases" "$L" 1
  python3 "$REPO/tools/gpu/attention_check.py" --netrun "$NETRUN" >>"$L" 2>&1
  rc=$?
  say "attention: cuBLAS path vs simple kernel exit $rc in $(( $(date +%s) - t0 )) s"
  tailto "attention check" "$L" 18
fi
if has matmul_bias; then
  L=$OUT/matmul_bias.log
  t0=$(date +%s)
  python3 "$REPO/tests/ops/compare_backends.py" --netrun "$NETRUN" --backend cuda --family gemm --filter linear_ \
    --jobs "$JOBS" --require-device >"$L" 2>&1
  say "matmul_bias: Linear-layer op cases (cuda vs cpu) exit $?"
  grep -E "^FAIL" "$L" | head -20 | tee -a "$S"
  tailto "matmul_bias cases" "$L" 1
  python3 "$REPO/tools/gpu/matmul_bias_check.py" --netrun "$NETRUN" ${MMB_MODELS:+--models "$MMB_MODELS"} \
    ${MMB_PRECISIONS:+--precisions "$MMB_PRECISIONS"} >>"$L" 2>&1
  rc=$?
  say "matmul_bias: fused vs unfused transformers exit $rc in $(( $(date +%s) - t0 )) s"
  tailto "matmul_bias check" "$L" 12
fi
if has int8; then
  L=$OUT/int8.log
  t0=$(date +%s)
  python3 "$REPO/tests/ops/compare_backends.py" --netrun "$NETRUN" --backend cuda --family quantize --filter QL \
    --jobs "$JOBS" --require-device >"$L" 2>&1
  say "int8: QLinearConv / QLinearMatMul op cases (cuda vs cpu) exit $?"
  grep -E "^FAIL" "$L" | head -20 | tee -a "$S"
  tailto "int8 cases" "$L" 1
  python3 "$REPO/tests/cpu/test_int8_qdq.py" --lib "$BUILD/lib/libnetrun.so" --backend cuda >>"$L" 2>&1
  rc=$?
  say "int8: QDQ models on cuda against onnxruntime exit $rc in $(( $(date +%s) - t0 )) s"
  grep -E "^FAIL" "$L" | head -20 | tee -a "$S"
  tailto "int8 QDQ models" "$L" 1
fi
if has rmsnorm; then
  L=$OUT/rmsnorm.log
  t0=$(date +%s)
  python3 "$REPO/tools/gpu/rmsnorm_check.py" --netrun "$NETRUN" >"$L" 2>&1
  rc=$?
  say "rmsnorm: fused vs unfused T5 / LLaMA blocks on cuda exit $rc"
  tailto "rmsnorm check" "$L" 12
  python3 "$REPO/tools/bench/rmsnorm_bench.py" --netrun "$NETRUN" --backend cuda --iters 500 >>"$L" 2>&1
  say "rmsnorm: rmsnorm_bench on cuda exit $? in $(( $(date +%s) - t0 )) s"
  tailto "rmsnorm bench" "$L" 5
fi
if has opencl; then
  L=$OUT/opencl.log
  : >"$L"
  t0=$(date +%s)
  V=$BUILD/ocl-vendors
  mkdir -p "$V" && echo libnvidia-opencl.so.1 >"$V/nvidia.icd"
  {
    export OCL_ICD_VENDORS=$V
    export NETRUN_CACHE_DIR=$BUILD/ocl-cache
    rm -rf "$NETRUN_CACHE_DIR"
    echo "== netrun --backends (OCL_ICD_VENDORS=$V)"
    "$NETRUN" --backends 2>&1 | sed -n '/^opencl/,/^[a-z]/p'
    echo "== first start vs second start (cache $NETRUN_CACHE_DIR), tiny_cnn"
    for i in 1 2; do
      "$NETRUN" "$REPO/examples/tiny_cnn.onnx" --backend opencl,cpu --iterations 20 2>&1 | grep -iE "prepare|first run|median"
    done
    echo "== op cases, opencl --strict vs cpu"
    timeout 150 python3 "$REPO/tests/ops/compare_backends.py" --netrun "$NETRUN" --backend opencl --jobs "$JOBS" \
      --require-device --sample ${OCL_SAMPLE:-3} --full gemm,conv,pool,softmax,norm 2>&1 | grep -E "^FAIL|passed" | tail -25
    echo "== model tests, opencl,cpu"
    python3 "$REPO/tests/models/build_models.py" "$BUILD/test-models" >/dev/null 2>&1
    timeout 120 python3 "$REPO/tests/models/run_model_tests.py" --netrun "$NETRUN" --models "$BUILD/test-models" \
      --backend opencl,cpu --rtol 1e-3 --atol 1e-3 2>&1 | tail -12
    echo "== ResNet-50 batch 1 fp32: opencl vs cuda (median of 50 runs)"
    [ -f "$BUILD/tv/resnet50.onnx" ] || python3 "$REPO/tests/cuda/export_torchvision.py" "$BUILD/tv" resnet50 2>&1 | grep -v Warning | tail -2
    for be in opencl cuda; do
      extra=()
      [ $be = cuda ] && extra=(--no-cuda-graph)
      for e in "" "${extra[@]}"; do
        echo "$be ${e:-} $("$NETRUN" "$BUILD/tv/resnet50.onnx" --backend $be,cpu --warmup 5 --iterations 50 $e 2>&1 | grep -E "median" | xargs)"
      done
    done
  } >>"$L" 2>&1
  say "opencl stage in $(( $(date +%s) - t0 )) s"
  cat "$L" >>"$S"
fi
say "== done; logs in $OUT"

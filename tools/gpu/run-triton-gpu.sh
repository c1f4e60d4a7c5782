#!/usr/bin/env bash
# The netrun backend for Triton Inference Server on a GPU machine: KIND_GPU instances on netrun's CUDA plugin.
# Self-checking: every stage prints a "PASS: ..." or "FAIL: ..." line, the last line is "RESULT: PASS" or
# "RESULT: FAIL (n)", and the exit code is 0 only when everything passed. Logs go to $OUT (at most 8 files):
#   summary.txt      machine, `netrun --backends`, the PASS/FAIL lines
#   test_gpu.log     tests/triton/test_triton.py --kind gpu: KIND_GPU models (the mlp strictly on cuda), outputs vs
#                    onnxruntime, 8 clients x 200 requests through the dynamic batcher, ragged lengths, bad requests
#                    and models, unload/reload, and request/response buffers in CUDA shared memory (needs cupy)
#   test_cpu.log     the same suite with KIND_CPU instances on the same server build
#   server_gpu.log   tritonserver's log of the GPU run
#   bench.log / bench.md   (BENCH=1) tools/bench/triton_bench.py --gpu: ResNet-50 and BERT-base, concurrency
#                    1/4/16/64, dynamic batching off/on, Triton+netrun against netrun direct (cuda,cpu), through
#                    tritonclient.http and the lean kserve client (tools/bench/kserve_client.py), at concurrency 1
#                    also with the tensors in system / CUDA shared memory; then tools/bench/triton_client_bench.py
#                    --gpu (each client's cost on a near-empty model), appended to bench.log
#
# What it needs, carried from a Debian machine that has the repo set up (tools/setup-debian.sh --tests):
#   tools/gpu/pack-triton.sh      -> build-triton-gpu-pkg/ (netrun + cuda plugin + libtriton_netrun.so, their
#                                    libraries, the trimmed tritonserver of the nvidia-pytriton 0.7.0 wheel, the
#                                    tritonclient wheels for Python 3.12); carry that folder (about 50 MiB)
# usage (from the repo root on the GPU machine):
#   PKG=build-triton-gpu-pkg [NB=BUILD_DIR] [BENCH=1] [OUT=/tmp/triton-gpu-out] tools/gpu/run-triton-gpu.sh
# Instead of the package's trimmed server, TRITON may name the nvidia_pytriton-0.7.0 wheel file itself.
# Environment: PKG (required), OUT, BENCH (1: run the benchmark), BENCH_ARGS (more triton_bench.py arguments,
# e.g. "--models resnet50 --requests 64"), TRITON (a .whl or .tar.xz of the server), PY (default python3).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PKG=${PKG:?PKG must name the folder made by tools/gpu/pack-triton.sh}
PKG=$(cd "$PKG" && pwd)
OUT=${OUT:-/tmp/triton-gpu-out}
# netrun: a build made on this machine (NB: e.g. tools/gpu/run-gpu-tests.sh with CMAKE_ARGS=-DNETRUN_TRITON=ON, the
# check that counts), else the package's build made elsewhere, unpacked (bin/, lib/, lib/extra/): a shortcut
if [ -n "${NB:-}" ]; then
  NB=$(cd "$NB" && pwd)
  [ -f "$NB/lib/triton/netrun/libtriton_netrun.so" ] || { echo "FAIL: $NB has no lib/triton/netrun/libtriton_netrun.so (configure with -DNETRUN_TRITON=ON)"; exit 1; }
else
  NB=/tmp/netrun-triton-build
  rm -rf "$NB" && mkdir -p "$NB" && tar -C "$NB" -xJf "$PKG/netrun.tar.xz" || { echo "FAIL: cannot unpack $PKG/netrun.tar.xz"; exit 1; }
fi
PY=${PY:-python3}
mkdir -p "$OUT"
S=$OUT/summary.txt
: >"$S"
fails=0
say() { echo "$@" | tee -a "$S"; }
pass() { say "PASS: $*"; }
fail() { say "FAIL: $*"; fails=$((fails + 1)); }

say "== machine"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1; "$PY" --version 2>&1;
  "$PY" -c 'import numpy, onnx, onnxruntime; print("numpy", numpy.__version__, "onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)' 2>&1; } | tee -a "$S"

# ---- Python side: tritonclient from the carried wheels, the server unpacked ----
SITE=/tmp/netrun-triton-site
rm -rf "$SITE" && mkdir -p "$SITE"
if ls "$PKG"/wheels/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$PKG"/wheels/*.whl \
    >"$OUT/pip.log" 2>&1 || fail "installing the carried wheels (see pip.log)"
fi
SRV=${TRITON:-$PKG/tritonserver.tar.xz}
case "$SRV" in
  *.whl) "$PY" -m zipfile -e "$SRV" "$SITE" ;;
  *.tar.xz) tar -C "$SITE" -xJf "$SRV" ;;
  *) fail "TRITON=$SRV is neither a .whl nor a .tar.xz" ;;
esac
chmod +x "$SITE"/pytriton/tritonserver/bin/tritonserver "$SITE"/pytriton/tritonserver/python_backend_stubs/*/* 2>/dev/null
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c 'import tritonclient.http' 2>>"$S" && pass "tritonclient imports" || fail "tritonclient does not import"

# ---- libraries: the package's extras; cuDNN from the toolkit or the nvidia-cudnn pip package ----
export LD_LIBRARY_PATH="$NB/lib/extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
P=$("$PY" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)
[ -n "$P" ] && [ -d "$P/lib" ] && export LD_LIBRARY_PATH="$P/lib:$LD_LIBRARY_PATH"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
export NETRUN_BACKEND_PATH="$NB/lib/netrun/backends"

say "== netrun --backends"
"$NB/bin/netrun" --backends 2>&1 | tee -a "$S"
if "$NB/bin/netrun" --backends 2>&1 | grep -E '^\s*cuda\s+yes' >/dev/null; then pass "netrun's cuda backend is available"
else fail "netrun's cuda backend is not available (see above)"; fi
if "$NB/bin/netrun" "$REPO/examples/tiny_cnn.onnx" --backend cuda --strict -q >"$OUT/netrun_cuda.txt" 2>&1; then
  pass "netrun runs examples/tiny_cnn.onnx on cuda (strict)"
else fail "netrun --backend cuda --strict on tiny_cnn (see netrun_cuda.txt)"; fi

BD="$NB/lib/triton/netrun"
say "== Triton: KIND_GPU"
t0=$(date +%s)
"$PY" "$REPO/tests/triton/test_triton.py" --backend-dir "$BD" --kind gpu --keep "$OUT/gpu-run" >"$OUT/test_gpu.log" 2>&1
rc=$?
cp "$OUT/gpu-run/server.log" "$OUT/server_gpu.log" 2>/dev/null; rm -rf "$OUT/gpu-run"
tail -n 3 "$OUT/test_gpu.log" | tee -a "$S"
case $rc in
  0) pass "test_triton.py --kind gpu ($(( $(date +%s) - t0 )) s)" ;;
  77) fail "test_triton.py --kind gpu skipped: tritonserver did not start (see test_gpu.log)" ;;
  *) fail "test_triton.py --kind gpu exit $rc (see test_gpu.log)" ;;
esac
grep -q "cuda_shm: input and output in GPU memory" "$OUT/test_gpu.log" && pass "CUDA shared memory in and out" ||
  fail "the CUDA shared memory check did not run (cupy missing?) or failed"
grep -qE "instance '[^']+': GPU, device 0, netrun backends 'cuda" "$OUT/server_gpu.log" 2>/dev/null &&
  pass "instances report KIND_GPU on device 0 with netrun backends cuda" ||
  fail "no KIND_GPU instance in the server log"

say "== Triton: KIND_CPU on the same build"
"$PY" "$REPO/tests/triton/test_triton.py" --backend-dir "$BD" --kind cpu >"$OUT/test_cpu.log" 2>&1
rc=$?
tail -n 1 "$OUT/test_cpu.log" | tee -a "$S"
[ $rc -eq 0 ] && pass "test_triton.py --kind cpu" || fail "test_triton.py --kind cpu exit $rc (see test_cpu.log)"

if [ "${BENCH:-0}" = 1 ]; then
  say "== benchmark (triton_bench.py --gpu ${BENCH_ARGS:-})"
  # shellcheck disable=SC2086
  "$PY" "$REPO/tools/bench/triton_bench.py" --build "$NB" --gpu --no-python --threads 4 --model-dir /tmp/netrun-bench-models \
    --md "$OUT/bench.md" ${BENCH_ARGS:-} >"$OUT/bench.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && pass "triton_bench.py --gpu (bench.md)" || fail "triton_bench.py --gpu exit $rc (see bench.log)"
  grep -E "ratio|direct p50|<= 1.10|server's handling" "$OUT/bench.md" 2>/dev/null | tee -a "$S"
  # where a request's time goes outside the model: each client against a near-empty model on a KIND_GPU instance
  # (tritonclient.http, the lean kserve client, system and CUDA shared memory, spin-wait); appended to bench.log
  say "== client overhead (triton_client_bench.py --gpu)"
  "$PY" "$REPO/tools/bench/triton_client_bench.py" --build "$NB" --gpu --requests 300 --rounds 3 >"$OUT/client.tmp" 2>&1
  rc=$?
  cat "$OUT/client.tmp" >>"$OUT/bench.log"
  grep -E "^\||bytes in" "$OUT/client.tmp" | tee -a "$S"
  rm -f "$OUT/client.tmp"
  [ $rc -eq 0 ] && pass "triton_client_bench.py --gpu" || fail "triton_client_bench.py --gpu exit $rc (see bench.log)"
fi

[ $fails -eq 0 ] && say "RESULT: PASS" || say "RESULT: FAIL ($fails)"
exit $((fails > 0))

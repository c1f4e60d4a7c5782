#!/usr/bin/env bash
# On the GPU machine (device tool), with a carried package (tools/gpu/pack-build.sh) and .deps: the memory plan
# with memory.inplace on and off on CUDA. ResNet-50 batch 32 fp32 through tools/bench/gpu_bench.py (planned
# memory, min-memory vs fastest), the CLI's memory figures for both policies x memory.inplace=1/0, outputs of
# on vs off compared byte for byte (b1 and b32), then STAGES=models of tools/gpu/run-gpu-tests.sh.
# usage: PKG=build-inplace-pkg OUT=... tests/memory/gpu_inplace_check.sh
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$(cd "${PKG:-$REPO/build-inplace-pkg}" && pwd)
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
L=$OUT/inplace.log
D=/tmp/netrun-deps
if ! command -v protoc-c >/dev/null && [ -f "$REPO/.deps/deps.tar.gz" ]; then
  rm -rf "$D" && mkdir -p "$D" && tar -C "$D" -xzf "$REPO/.deps/deps.tar.gz"
  export LD_LIBRARY_PATH="$D/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export LD_LIBRARY_PATH="$PKG/lib/extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NETRUN_BACKEND_PATH=$PKG/lib/netrun/backends
NR=$PKG/bin/netrun
W=/tmp/inplace-work
mkdir -p "$W"
{
  echo "== gpu_bench (memory.inplace default = 1)"
  timeout 150 python3 "$REPO/tools/bench/gpu_bench.py" --netrun "$NR" --models resnet50 --batches 32 --big 0 \
    --precisions fp32 --no-torch --work "$W" --md "$OUT/mem.md" 2>&1 | grep -v '^{' | tail -8
  echo "== CLI memory figures, ResNet-50 b32 fp32 (arena / weights / workspace / device peak, MiB)"
  for pol in fastest min-memory; do
    for ip in 1 0; do
      timeout 60 "$NR" "$W/resnet50.onnx" --backend cuda --batch 32 --warmup 1 --iterations 3 --seed 1 \
        --workspace-policy $pol --set memory.inplace=$ip --json - 2>/dev/null | python3 -c "
import json, sys
m = json.load(sys.stdin).get('memory') or {}
f = lambda k: (m.get(k) or 0) / 2**20
print('policy %-10s inplace=%s: arena %.1f, weights %.1f, workspace %.1f, planned %.1f, device peak %.1f' % (
    '$pol', '$ip', f('arena_bytes'), f('weight_bytes'), f('workspace_bytes'),
    f('arena_bytes') + f('weight_bytes') + f('workspace_bytes'), f('device_peak_bytes')))"
    done
  done
  echo "== outputs, memory.inplace=1 vs 0 on cuda (byte for byte)"
  for b in 1 32; do
    for ip in 1 0; do
      timeout 60 "$NR" "$W/resnet50.onnx" --backend cuda --batch $b --warmup 0 --iterations 1 --seed 3 \
        --set memory.inplace=$ip --output-dir "$W/out_b${b}_$ip" >/dev/null 2>&1 || echo "run b$b inplace=$ip failed"
    done
    python3 -c "
import glob, os, numpy as np
for f in sorted(glob.glob('$W/out_b${b}_1/*.npy')):
    a, c = np.load(f), np.load(f.replace('_1/', '_0/'))
    print('b$b', os.path.basename(f), 'bitwise equal' if a.tobytes() == c.tobytes() else 'DIFFER max %g' % abs(a - c).max())"
  done
  timeout 60 "$NR" "$W/resnet50.onnx" --backend cuda --batch 1 --explain 2>&1 | grep -c "in place" | sed 's/^/nodes in place (explain, b1): /'
} >"$L" 2>&1
cat "$L"
echo "== run-gpu-tests.sh STAGES=models"
BUILD=$PKG STAGES="models" JOBS=16 OUT=$OUT timeout 150 bash "$REPO/tools/gpu/run-gpu-tests.sh" 2>&1 | tail -40

#!/usr/bin/env python3
"""Loading a model whose weights are inline (raw_data in the .onnx file) must not hold the weights twice: the file
is mapped and its pages dropped as each tensor is copied out (runtime/model.c, importers/onnx pb_alloc).

usage: test_load_rss.py --lib libnetrun.so [--mib N]
Builds a model of N MiB of float32 initializers (default 96) with onnx.helper, then loads it with
netrun_model_load in a fresh process and compares that process's peak RSS growth with the weights' size: the
whole file read into memory plus the decoded copy gives about 2x; one copy, 1x plus small change. Prints
'1 passed, 0 failed' or the numbers and exits 1. (docs/benchmarks.md has the figures for a 384 MiB model.)
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, sys
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return int(line.split()[1]) * 1024
lib = ctypes.CDLL(sys.argv[1])
lib.netrun_last_error.restype = ctypes.c_char_p
before = status('VmRSS')
m = ctypes.c_void_p()
rc = lib.netrun_model_load(sys.argv[2].encode(), ctypes.byref(m))
if rc != 0:
    print('load failed:', lib.netrun_last_error().decode())
    sys.exit(2)
print(before, status('VmHWM'), status('VmRSS'))
lib.netrun_model_release(m)
"""


def make_model(path, mib):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    n = 1024  # each initializer is n x n float32 = 4 MiB
    count = max(1, mib // 4)
    nodes, inits, prev = [], [], "x"
    rng = np.random.default_rng(0)
    for i in range(count):
        w = rng.standard_normal((n, n), dtype=np.float32) * 0.01
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"y{i}"], name=f"mm{i}"))
        prev = f"y{i}"
    g = helper.make_graph(nodes, "inline", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, n])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)  # inline: raw_data inside the file
    return count * n * n * 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--mib", type=int, default=96)
    a = ap.parse_args()
    if "LD_PRELOAD" in os.environ:  # sanitizer runtime: its shadow memory makes RSS meaningless
        print("  (under AddressSanitizer: RSS not measured)\n1 passed, 0 failed")
        return 0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "inline.onnx")
        weights = make_model(path, a.mib)
        r = subprocess.run([sys.executable, "-c", CHILD, a.lib, path], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(f"FAIL: child exit {r.returncode}: {r.stdout} {r.stderr}\n0 passed, 1 failed")
            return 1
        before, peak, after = map(int, r.stdout.split())
        growth = peak - before
        mib = 1 << 20
        print(f"  weights {weights / mib:.0f} MiB in the file ({os.path.getsize(path) / mib:.0f} MiB): peak RSS growth "
              f"{growth / mib:.0f} MiB while loading, {(after - before) / mib:.0f} MiB held after")
        if growth > 1.3 * weights:
            print(f"FAIL: loading held {growth / weights:.2f}x the weights at its peak (want <= 1.3x)\n0 passed, 1 failed")
            return 1
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

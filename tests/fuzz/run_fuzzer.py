#!/usr/bin/env python3
"""Runs one netrun libFuzzer harness for a bounded time, seeded from the ONNX node tests.

usage: run_fuzzer.py --fuzzer PATH --kind importer|tensor [--seconds 60] [--work DIR] [--hostile DIR]
                     [--dict tests/fuzz/onnx.dict] [-- extra libFuzzer flags]

importer seeds: every model.onnx of the pinned onnx's node tests (--node-cache), contrib-op and quantized models
                (seed_models.py), plus the hostile corpus (--hostile).
tensor seeds:   the input/output .pb files of the node tests, plus a few .npy files written here.
The fuzzer stops at the first crash, sanitizer report, leak, timeout (10 s an input) or RSS past 4 GB;
this script then prints the reproducer's path and exits 1. New coverage is kept in DIR/corpus, so
repeated runs go deeper.
"""
import argparse
import os
import shutil
import subprocess
import sys


def node_dir(cache):
    """The pinned onnx's node tests: the wheel's, or (onnx 1.23 on) written once into cache by run_conformance.py."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return None
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
    import run_conformance
    return run_conformance.node_test_dir(cache or os.path.join(os.getcwd(), "onnx-node-tests"))


def make_seeds(kind, seeds, hostile, node_cache=None):
    os.makedirs(seeds, exist_ok=True)
    if os.listdir(seeds):
        return
    nd = node_dir(node_cache)
    if nd:
        for t in sorted(os.listdir(nd)):
            src = os.path.join(nd, t)
            if kind == "importer":
                if os.path.exists(os.path.join(src, "model.onnx")):
                    shutil.copy(os.path.join(src, "model.onnx"), os.path.join(seeds, t + ".onnx"))
            else:
                ds = os.path.join(src, "test_data_set_0")
                for f in sorted(os.listdir(ds)) if os.path.isdir(ds) else []:
                    if f.endswith(".pb"):
                        shutil.copy(os.path.join(ds, f), os.path.join(seeds, f"{t}_{f}"))
    if kind == "importer":  # contrib ops and quantized models (seed_models.py): the node tests have neither
        import logging
        logging.getLogger().setLevel(logging.ERROR)  # onnxruntime.quantization's advice on pre-processing
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        try:
            import seed_models
            print(f"{seed_models.extra_importer_seeds(seeds)} contrib and quantized seeds")
        except ImportError as e:
            print(f"no contrib or quantized seeds ({e})")
    if kind == "importer" and hostile and os.path.isdir(hostile):
        for f in os.listdir(hostile):
            if f.endswith(".onnx"):
                shutil.copy(os.path.join(hostile, f), os.path.join(seeds, "hostile_" + f))
    if kind == "tensor":
        try:
            import numpy as np
            for i, a in enumerate([np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros((0, 4), np.int64),
                                   np.array(3.5, np.float64), np.ones((2, 2, 2), np.uint8),
                                   np.arange(4, dtype=np.float16), np.array([True, False]),
                                   np.arange(6, dtype=">i4").reshape(3, 2), np.asfortranarray(np.eye(3))]):
                np.save(os.path.join(seeds, f"seed_{i}.npy"), a)
        except ImportError:
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fuzzer", required=True)
    ap.add_argument("--kind", choices=["importer", "tensor"], required=True)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--work", default="fuzz-work")
    ap.add_argument("--hostile")
    ap.add_argument("--node-cache", help="where run_conformance.py writes the node tests when the wheel lacks them")
    ap.add_argument("--dict", help="libFuzzer dictionary (op, attribute and domain names: make_dict.py)")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    seeds = os.path.join(a.work, "seeds")
    corpus = os.path.join(a.work, "corpus")
    artifacts = os.path.join(a.work, "artifacts") + os.sep
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    make_seeds(a.kind, seeds, a.hostile, a.node_cache)
    env = dict(os.environ)
    # Huge allocations asked for by a model must come back as NULL (netrun reports out of memory), not
    # abort the fuzzer; real RSS growth is still capped by -rss_limit_mb.
    # (the harnesses add intercept_tls_get_addr=0 themselves: tests/fuzz/sanitizer_defaults.h says why)
    env.setdefault("ASAN_OPTIONS", "allocator_may_return_null=1:max_allocation_size_mb=2048:detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    # a fixed seed keeps CI runs repeatable (new paths are for the long runs, see docs/reliability.md)
    cmd = [a.fuzzer, "-seed=1", f"-max_total_time={a.seconds}", "-rss_limit_mb=4096", "-timeout=10", "-max_len=65536",
           "-print_final_stats=1", f"-artifact_prefix={artifacts}"] + ([f"-dict={a.dict}"] if a.dict else []) + \
        a.extra + [corpus, seeds]
    print(" ".join(cmd))
    sys.stdout.flush()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    out = r.stdout
    lines = out.splitlines()
    stats = [l for l in lines if l.startswith("stat::") or " DONE " in l or "INITED" in l]
    print("\n".join(stats))
    if r.returncode != 0:
        print("\n".join(lines[-80:]))
        found = sorted(os.listdir(artifacts))
        print(f"FAIL: fuzzer exit {r.returncode}; reproducers in {artifacts}: {found}")
        print(f"reproduce: {a.fuzzer} {artifacts}<file>")
        return 1
    print(f"ok: {a.kind} fuzzer ran {a.seconds} s without a finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())

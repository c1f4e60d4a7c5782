#!/usr/bin/env python3
"""Mutation sweeps over the ONNX node tests: a manual tool (not a ctest; minutes to run) that found the
absent-input and huge-attribute crashes listed in docs/reliability.md.

usage: sweep_node_tests.py --netrun PATH --sweep absent|attrs|zero [--work DIR] [--mem-limit-mb N]

  absent  each input of each single-node test in turn given as "" (absent), once per (op, input)
  attrs   each int/ints attribute set to -1, 0, 2^31 and -2^62, once per (op, attribute)
  zero    the first dim of every input set to 0, one model per op

Each mutated model runs as `netrun MODEL --backend cpu --threads 1 --iterations 1 --warmup 0 -q`; lines
are printed for runs that end in a signal, a timeout (20 s), exit code > 3 or a sanitizer report.
Use an ASan+UBSan build of netrun to see silent bad reads, with --mem-limit-mb 0 (ASan needs a large
address space); otherwise the default 4 GB address-space limit keeps a hostile shape from eating the
machine's memory (until TfIdfVectorizer bounds its output, one attrs model takes 17 GB without it).
"""
import argparse
import glob
import os
import re
import resource
import subprocess
import sys

import onnx
from onnx import AttributeProto


def node_tests():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
    import run_conformance  # the wheel's node tests, or (onnx 1.23 on) written once into build/onnx-node-tests
    nd = run_conformance.node_test_dir(os.path.join(os.getcwd(), "build", "onnx-node-tests"))
    for d in sorted(glob.glob(os.path.join(nd, "*", ""))):
        m = onnx.load(os.path.join(d, "model.onnx"))
        if len(m.graph.node) == 1:
            yield os.path.basename(os.path.dirname(d)), m


def sweep_absent():
    seen = set()
    for test, m in node_tests():
        n = m.graph.node[0]
        for k, name in enumerate(n.input):
            if not name or (n.op_type, k) in seen:
                continue
            seen.add((n.op_type, k))
            m2 = onnx.ModelProto()
            m2.CopyFrom(m)
            m2.graph.node[0].input[k] = ""
            yield f"{n.op_type}_in{k}__{test}", m2


def sweep_attrs():
    seen = set()
    for test, m in node_tests():
        n = m.graph.node[0]
        for ai, a in enumerate(n.attribute):
            if a.type not in (AttributeProto.INT, AttributeProto.INTS) or (n.op_type, a.name) in seen:
                continue
            seen.add((n.op_type, a.name))
            for vi, v in enumerate([-1, 0, 1 << 31, -(1 << 62)]):
                m2 = onnx.ModelProto()
                m2.CopyFrom(m)
                a2 = m2.graph.node[0].attribute[ai]
                if a.type == AttributeProto.INT:
                    a2.i = v
                else:
                    del a2.ints[:]
                    a2.ints.extend([v] * max(1, len(a.ints)))
                yield f"{n.op_type}__{a.name}__{v}__{test}", m2


def sweep_zero():
    seen = set()
    for test, m in node_tests():
        op = m.graph.node[0].op_type
        if op in seen:
            continue
        changed = False
        for i in m.graph.input:
            t = i.type.tensor_type
            if t.HasField("shape") and len(t.shape.dim) >= 1:
                t.shape.dim[0].Clear()
                t.shape.dim[0].dim_value = 0
                changed = True
        for o in m.graph.output:  # declared output shapes no longer hold
            o.type.tensor_type.ClearField("shape")
        if changed:
            seen.add(op)
            yield f"{op}__{test}", m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--sweep", choices=["absent", "attrs", "zero"], required=True)
    ap.add_argument("--work", default="/tmp/netrun-sweep")
    ap.add_argument("--mem-limit-mb", type=int, default=4096)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1").lstrip(":")

    def limit():
        if a.mem_limit_mb:
            b = a.mem_limit_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (b, b))

    gen = {"absent": sweep_absent, "attrs": sweep_attrs, "zero": sweep_zero}[a.sweep]
    total = bad = 0
    for name, m in gen():
        path = os.path.join(a.work, re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".onnx")
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        total += 1
        cmd = [a.netrun, path, "--backend", "cpu", "--threads", "1", "--iterations", "1", "--warmup", "0", "-q"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=20, env=env,
                               preexec_fn=limit)
            err = r.stderr
            why = None
            if r.returncode < 0:
                why = f"signal {-r.returncode}"
            elif r.returncode > 3:
                why = f"exit {r.returncode}"
            m_ = re.search(r"SUMMARY: \w+Sanitizer: .*|runtime error: .*", err)
            if m_:
                why = m_.group(0)[:200]
        except subprocess.TimeoutExpired:
            why = "timeout 20 s"
        if why:
            bad += 1
            print(f"{name}: {why}\n    {path}")
            sys.stdout.flush()
    print(f"{total} models, {bad} with findings")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

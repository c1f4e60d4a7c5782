#!/usr/bin/env python3
"""Generate the facts the docs state, so that they cannot go stale: the version, the ONNX version and opset the
tests pin, the node-test counts, the op counts per backend, and the support matrix (docs/support-matrix.md).

In any Markdown file of the repository, a fact sits between markers: <!-- gen:KEY -->value<!-- /gen -->. Keys:
  version            netrun's version (include/netrun.h)
  onnx               the onnx version tests/requirements.txt pins
  opset              the newest ONNX opset the runtime knows (layers/op_inputs.c, made from that onnx)
  node_tests         the number of ONNX node tests in the pinned onnx (needs it installed)
  pass:BACKEND       node tests expected to pass (tests/conformance/expected_BACKEND.txt)
  ops:runtime        ops the runtime knows; ops:BACKEND: ops the backend's table lists (needs the plugin built)
Inside code blocks, where markers would show, example outputs are matched by the patterns of IN_CODE instead (the
version a report prints, the counts --support-matrix prints).
A fact this build cannot compute (the cuda plugin not built, another onnx installed) is left as it is.

usage: gen-docs.py --netrun build/bin/netrun          rewrite the facts and docs/support-matrix.md
       gen-docs.py --netrun build/bin/netrun --check  exit 1 and name each stale fact (ctest docs.generated)
"""
import argparse
import csv
import io
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = re.compile(r"(<!-- gen:([a-z_:]+) -->)(.*?)(<!-- /gen -->)", re.S)
MATRIX = os.path.join(ROOT, "docs", "support-matrix.md")
IN_CODE = [  # (pattern whose group 1 is the fact, key)
    (re.compile(r'"netrun_version": "(\d+\.\d+\.\d+)"'), "version"),
    (re.compile(r"netrun (\d+\.\d+\.\d+), \d+ backend plugin"), "version"),
    (re.compile(r"\(\d+ nodes, netrun (\d+\.\d+\.\d+)\)"), "version"),
    (re.compile(r"Support matrix: (\d+) ops known to the runtime"), "ops:runtime"),
] + [(re.compile(r"^  %s +(\d+) ops listed" % b, re.M), "ops:" + b) for b in ("cpu", "cuda", "opencl")]
SHOWN_BACKENDS = ("contrib", "cpu", "cuda", "opencl")  # the template backend is a demo, not shipped
SHORT = {"float32": "f32", "float16": "f16", "float64": "f64", "bfloat16": "bf16", "bool": "bool", "uint8": "u8",
         "int8": "i8", "uint16": "u16", "int16": "i16", "uint32": "u32", "int32": "i32", "uint64": "u64",
         "int64": "i64"}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def onnx_node_dir(pinned):
    """The node tests shipped in the installed onnx wheel when it is the pinned one, else None."""
    try:
        import onnx
    except ImportError:
        return None
    node = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    return node if onnx.__version__ == pinned else None


def facts(netrun):
    """KEY -> value for every fact this build can compute."""
    out = {}
    hdr = read(os.path.join(ROOT, "include", "netrun.h"))
    out["version"] = ".".join(re.search(r"#define NETRUN_VERSION_%s (\d+)" % k, hdr).group(1)
                              for k in ("MAJOR", "MINOR", "PATCH"))
    pinned = re.search(r"^onnx==(\S+)", read(os.path.join(ROOT, "tests", "requirements.txt")), re.M).group(1)
    out["onnx"] = pinned
    out["opset"] = re.search(r"nr_onnx_opset_max = (\d+);", read(os.path.join(ROOT, "layers", "op_inputs.c"))).group(1)
    # the node tests: in the wheel up to onnx 1.22, else where run_conformance.py wrote them for this build
    build = os.path.dirname(os.path.dirname(os.path.abspath(netrun)))
    for node in (os.path.join(build, "onnx-node-tests", "node-" + pinned), onnx_node_dir(pinned)):
        if node and os.path.isdir(node) and os.listdir(node):
            out["node_tests"] = "{:,}".format(sum(1 for d in os.listdir(node) if d.startswith("test_")))
            break
    for b in SHOWN_BACKENDS:
        p = os.path.join(ROOT, "tests", "conformance", "expected_%s.txt" % b)
        if os.path.exists(p):
            out["pass:" + b] = "{:,}".format(sum(1 for ln in read(p).splitlines() if ln.strip()))
    text = subprocess.run([netrun, "--support-matrix"], capture_output=True, text=True, check=True).stdout
    out["ops:runtime"] = re.search(r"(\d+) ops known to the runtime", text).group(1)
    for m in re.finditer(r"^  (\S+)\s+(\d+) ops listed", text, re.M):
        if m.group(1) in SHOWN_BACKENDS:
            out["ops:" + m.group(1)] = m.group(2)
    return out


def matrix(netrun, committed):
    """docs/support-matrix.md: the built backends' columns from the plugins, the others kept from committed."""
    rows = list(csv.DictReader(io.StringIO(subprocess.run([netrun, "--support-matrix", "--format", "csv"],
                                                          capture_output=True, text=True, check=True).stdout)))
    built = sorted({r["backend"] for r in rows if r["backend"] in SHOWN_BACKENDS})
    cells = {}  # (op, backend) -> text
    ops = []
    for r in rows:
        op = (r["domain"] + "." if r["domain"] else "") + r["op"] + ("" if r["known_to_runtime"] == "1" else " *")
        if op not in ops:
            ops.append(op)
        if r["backend"] in built and r["supported"] == "1":
            types = ",".join(SHORT.get(t.strip(), t.strip()) for t in r["dtypes"].split(",") if t.strip())
            cells[(op, r["backend"])] = (types + ("<br>" + r["constraints"] if r["constraints"] else "")).replace("|", "\\|")
    # columns of backends this build lacks (cuda without nvcc) come from the committed file
    old_cols, kept = [], set()
    for ln in committed.splitlines():
        # cells split on the '|' that are not escaped ('\|' inside a cell: "fmod 0\|1")
        parts = [p.strip() for p in re.split(r"(?<!\\)\|", ln.strip()[1:-1])] if ln.startswith("|") else []
        if parts and parts[0] == "Op":
            old_cols = parts[1:]
        elif parts and old_cols and not set(parts[0]) <= {"-"}:
            for b, c in zip(old_cols, parts[1:]):
                if b not in built and b in SHOWN_BACKENDS:
                    kept.add(b)
                    if c != "—":
                        cells[(parts[0], b)] = c
                    if parts[0] not in ops:
                        ops.append(parts[0])
    cols = sorted(set(built) | kept)
    ops.sort(key=lambda o: (o.count(".") > 0 and not o[0].isupper(), o.lower()))
    lines = ["# Support matrix", "",
             "<!-- generated by tools/gen-docs.py from the backends' own tables: do not edit -->", "",
             "Which element types each backend's kernels take, op by op, and their limits, as each plugin states them",
             "(`netrun --support-matrix` prints the same for the plugins on your machine). Placement still asks each",
             "backend about every node: a listed op may be refused for an attribute or shape the cell names.",
             "Ops marked * are listed by a plugin but unknown to the runtime.", "",
             "| Op | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for op in ops:
        lines.append("| %s | %s |" % (op, " | ".join(cells.get((op, b), "—") for b in cols)))
    return "\n".join(lines) + "\n"


def markdown_files():
    skip = {".git", ".venv", "node_modules"}
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = [x for x in dirs if x not in skip and not x.startswith("build")]
        for f in files:
            if f.endswith(".md"):
                yield os.path.join(d, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    known = facts(a.netrun)
    stale = []
    for path in markdown_files():
        text = read(path)
        if os.path.abspath(path) == MATRIX:
            continue

        def fill(m):
            key, value = m.group(2), m.group(3)
            if key in known and known[key] != value:
                stale.append("%s: %s is '%s', should be '%s'" % (os.path.relpath(path, ROOT), key, value, known[key]))
                return m.group(1) + known[key] + m.group(4)
            return m.group(0)
        new = MARK.sub(fill, text)
        for pat, key in IN_CODE:
            if key not in known:
                continue

            def fix(m, key=key):
                if m.group(1) == known[key]:
                    return m.group(0)
                stale.append("%s: %s is '%s' in an example, should be '%s'" % (os.path.relpath(path, ROOT), key,
                                                                               m.group(1), known[key]))
                return m.group(0)[:m.start(1) - m.start(0)] + known[key] + m.group(0)[m.end(1) - m.start(0):]
            new = pat.sub(fix, new)
        if new != text and not a.check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    committed = read(MATRIX) if os.path.exists(MATRIX) else ""
    table = matrix(a.netrun, committed)
    if table != committed:
        stale.append("docs/support-matrix.md differs from the backends' tables")
        if not a.check:
            with open(MATRIX, "w", encoding="utf-8") as f:
                f.write(table)
    if a.check and stale:
        print("gen-docs: the docs are stale:\n  " + "\n  ".join(stale))
        print("Run: python3 tools/gen-docs.py --netrun <build>/bin/netrun (and commit the result)")
        return 1
    print("gen-docs: %s (%d facts known to this build)" % ("up to date" if a.check else
                                                           "%d updated" % len(stale), len(known)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

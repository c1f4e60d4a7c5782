#!/usr/bin/env python3
"""Writes tests/fuzz/onnx.dict, the libFuzzer dictionary of the fuzzers (-dict=): the op names, attribute names
and domains of the ONNX schemas (onnx package), the field keys of the protobuf messages netrun reads, and edge
values, so that byte-level mutations insert whole words instead of stumbling on them.

usage: make_dict.py [--out tests/fuzz/onnx.dict]   (deterministic: rerunning writes the same file)
"""
import argparse
import os
import struct

from onnx import defs


def esc(b):
    return "".join(chr(c) if 32 <= c < 127 and chr(c) not in '"\\' else f"\\x{c:02x}" for c in b)


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx.dict"))
    a = ap.parse_args()
    ops, attrs, domains = set(), set(), {"", "ai.onnx", "com.microsoft", "fuzz.local"}
    for s in defs.get_all_schemas_with_history():
        ops.add(s.name)
        domains.add(s.domain)
        attrs.update(s.attributes.keys())
    # graph-level names: attribute and field vocabulary the importer and the runtime react to
    attrs.update(["then_branch", "else_branch", "body", "value", "value_float", "value_ints", "location", "offset",
                  "length", "to", "axis", "axes", "perm", "keepdims", "ref_attr_name"])
    # the contrib plugin's com.microsoft ops (backends/contrib: not in the onnx package's schemas)
    ops.update(["FastGelu", "BiasGelu", "QuickGelu", "BiasAdd", "SkipLayerNormalization",
                "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization", "FusedMatMul", "Attention"])
    attrs.update(["transBatchA", "transBatchB", "num_heads", "unidirectional", "qkv_hidden_sizes",
                  "mask_filter_value", "do_rotary", "past_present_share_buffer", "scale"])
    entries = []
    for w in sorted(ops):
        entries.append(("op", w.encode()))
    for w in sorted(attrs):
        entries.append(("attr", w.encode()))
    for w in sorted(domains):
        if w:
            entries.append(("domain", w.encode()))
    # protobuf keys: (field << 3 | wire) of NodeProto, GraphProto, ModelProto, AttributeProto, TensorProto
    for field in range(1, 26):
        for wire in (0, 2, 5):
            entries.append(("key", varint(field << 3 | wire)))
    # edge values as varints and raw floats
    for v in (0, 1, 127, 128, 255, 2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, 2**64 - 1):
        entries.append(("int", varint(v)))
    for f in (float("nan"), float("inf"), -float("inf"), 3.4028235e38, 1e-45, -0.0):
        entries.append(("float", struct.pack("<f", f)))
    seen = set()
    with open(a.out, "w") as out:
        out.write("# libFuzzer dictionary for netrun's fuzzers: written by tests/fuzz/make_dict.py from the onnx "
                  "schemas; do not edit\n")
        for kind, b in entries:
            if b in seen:
                continue
            seen.add(b)
            out.write(f'{kind}_{len(seen)}="{esc(b)}"\n')
    print(f"{len(seen)} entries written to {a.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the hostile-model corpus: broken or malicious ONNX files that netrun must refuse cleanly.

usage: make_corpus.py [--out tests/corpus/models] [--hang-cases DIR]

Deterministic (fixed seeds): rerunning it rewrites the same bytes, so the committed files and this script
agree. Besides the models it writes expect.json: for each file the exit codes netrun may give and words
of which at least one must appear in its error message (what went wrong, and where: a node, a tensor,
a byte offset...), and extra netrun arguments where a case needs them. --hang-cases DIR also writes the
cases that only a runtime limit ends (an endless Loop) to DIR, to try them with the default limits.
"""
import argparse
import json
import os
import random
import struct

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

CASES = []  # (file name, bytes, allowed exit codes, words one of which the message must contain, extra args)


def add(name, data, codes, words, args=()):
    if not isinstance(data, (bytes, bytearray)):
        data = data.SerializeToString()
    CASES.append((name, bytes(data), sorted(codes), list(words), list(args)))


def model(nodes, inputs, outputs, inits=(), opset=17, domains=(), ir=8):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in domains]
    m = helper.make_model(g, opset_imports=ops, producer_name="netrun-corpus")
    m.ir_version = ir
    return m


def rawt(name, dtype, dims, raw):
    """A TensorProto built field by field: onnx.helper refuses raw data of the wrong size."""
    return TensorProto(name=name, data_type=dtype, dims=list(dims), raw_data=raw)


def vi(name, dims, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, dims)


def relu_model(dims=(2, 3)):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", list(dims))],
                 [vi("y", list(dims))])


def conv_model():
    w = numpy_helper.from_array(np.linspace(-1, 1, 8 * 3 * 3 * 3, dtype=np.float32).reshape(8, 3, 3, 3), "w")
    b = numpy_helper.from_array(np.zeros(8, np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu0")]
    return model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 8, 8, 8])], [w, b])


# ---- raw protobuf helpers ----
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint((field << 3) | wire)


def ld(field, payload):  # length-delimited field
    return key(field, 2) + varint(len(payload)) + payload


def build():
    rng = random.Random(1234)
    valid = conv_model().SerializeToString()

    # ---- 1. bytes that are not a model ----
    add("empty.onnx", b"", {2}, ["empty", "no graph", "0 bytes", "graph"])
    add("text_file.onnx", b"this is not an ONNX model, just text\n", {2}, ["not a valid", "byte", "wire"])
    for i, n in enumerate((16, 700, 4096)):
        add(f"random_bytes_{i}.onnx", bytes(rng.getrandbits(8) for _ in range(n)), {2},
            ["not a valid", "byte", "graph", "wire"])
    add("all_ff.onnx", b"\xff" * 64, {2}, ["not a valid", "byte", "varint"])
    for frac, tag in ((0.5, "half"), (0.9, "90pct")):
        add(f"truncated_{tag}.onnx", valid[:int(len(valid) * frac)], {2}, ["truncated", "byte", "not a valid"])
    add("truncated_last_byte.onnx", valid[:-1], {2}, ["truncated", "byte", "not a valid"])
    # graph field (7) claiming 1000 bytes with 10 present; and a 2^48 length
    add("length_past_end.onnx", key(1, 0) + varint(8) + ld(7, b"")[:1] + varint(1000) + b"\x0a" * 10, {2},
        ["truncated", "byte", "past"])
    add("length_huge.onnx", key(1, 0) + varint(8) + key(7, 2) + varint(1 << 48) + b"\x00" * 8, {2},
        ["truncated", "byte", "past", "length"])
    add("varint_overlong.onnx", key(1, 0) + b"\xff" * 11 + b"\x01", {2}, ["varint", "byte", "not a valid"])
    add("bad_wire_type.onnx", key(1, 0) + varint(8) + key(7, 7) + b"\x00" * 4, {2}, ["wire type", "byte"])
    # node (graph field 1) whose inner length overruns the graph's own length
    node = ld(1, b"x") + ld(2, b"y") + ld(4, b"Relu")
    bad_graph = key(1, 2) + varint(len(node) + 40) + node
    add("nested_length_overrun.onnx", key(1, 0) + varint(8) + ld(7, bad_graph) + ld(8, ld(1, b"") + key(2, 0) + varint(17)),
        {2}, ["truncated", "byte", "past"])
    # 900 levels of messages nested through If's then_branch: must be refused before protobuf-c recurses
    deep = b""
    for _ in range(300):
        attr = ld(1, b"then_branch") + key(20, 0) + varint(5) + ld(6, deep)
        deep = ld(1, ld(4, b"If") + ld(5, attr))  # graph { node { op_type, attribute } }
    add("proto_nesting_900.onnx", key(1, 0) + varint(8) + ld(7, deep) + ld(8, key(2, 0) + varint(17)), {2},
        ["nested", "depth", "deep"])
    for i in range(3):  # seeded bit flips of a valid model
        b = bytearray(valid)
        for _ in range(8):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        add(f"bitflip_{i}.onnx", bytes(b), {0, 1, 2}, ["byte", "node", "tensor", "attribute", "not", "input",
                                                        "shape", "dims", "invalid", "model", "'"])

    # ---- 2. graph structure ----
    add("no_graph.onnx", key(1, 0) + varint(8) + ld(8, key(2, 0) + varint(17)), {2}, ["graph"])
    add("cycle.onnx", model([helper.make_node("Relu", ["b"], ["a"], name="n_a"),
                             helper.make_node("Relu", ["a"], ["b"], name="n_b"),
                             helper.make_node("Add", ["x", "a"], ["y"], name="n_add")],
                            [vi("x", [2])], [vi("y", [2])]), {2}, ["cycle", "n_a", "n_b"])
    add("self_loop.onnx", model([helper.make_node("Add", ["x", "s"], ["s"], name="selfie"),
                                 helper.make_node("Relu", ["s"], ["y"], name="r")],
                                [vi("x", [2])], [vi("y", [2])]), {2}, ["cycle", "selfie", "'s'"])
    add("undefined_input.onnx", model([helper.make_node("Add", ["x", "nope"], ["y"], name="adder")],
                                      [vi("x", [2])], [vi("y", [2])]), {2}, ["nope"])
    add("duplicate_output.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="first"),
                                        helper.make_node("Neg", ["x"], ["y"], name="second")],
                                       [vi("x", [2])], [vi("y", [2])]), {2}, ["'y'", "second", "duplicate",
                                                                              "more than once"])
    init = numpy_helper.from_array(np.ones(2, np.float32), "w")
    add("duplicate_initializer.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="a")],
                                            [vi("x", [2])], [vi("y", [2])], [init, init]), {2}, ["'w'", "duplicate",
                                                                                                "more than once"])
    add("duplicate_graph_input.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                            [vi("x", [2]), vi("x", [3])], [vi("y", [2])]), {2},
        ["'x'", "duplicate", "more than once"])
    add("output_not_produced.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                          [vi("x", [2])], [vi("ghost", [2])]), {2}, ["ghost"])
    add("node_without_outputs.onnx", model([helper.make_node("Relu", ["x"], [], name="mute"),
                                            helper.make_node("Neg", ["x"], ["y"], name="n")],
                                           [vi("x", [2])], [vi("y", [2])]), {0, 1, 2}, ["mute", "output"])
    add("relu_too_many_inputs.onnx", model([helper.make_node("Relu", ["x", "x", "x"], ["y"], name="greedy")],
                                           [vi("x", [2])], [vi("y", [2])]), {2}, ["greedy", "input"])
    # found by fuzz_importer: a required input given as "" (absent); ReduceMax read past its axes array
    add("reduce_absent_data.onnx", model([helper.make_node("ReduceMax", [""], ["y"], name="rmax", keepdims=1)],
                                         [vi("x", [3, 2])], [vi("y", None)], opset=18), {2}, ["rmax", "input"])
    idx0 = numpy_helper.from_array(np.array([0], np.int64), "idx")
    add("gather_absent_indices.onnx", model([helper.make_node("Gather", ["x", ""], ["y"], name="gat0")],
                                            [vi("x", [3, 2])], [vi("y", None)], [idx0]), {2}, ["gat0", "input"])
    # found by fuzz_importer (33 min into the long run): Size with no input at all; constant folding ran
    # the CPU kernel on a missing input (cpu_count read dims[8])
    add("size_without_input.onnx", model([helper.make_node("Size", [], ["y"], name="sizer")], [vi("x", [2])],
                                         [vi("y", [], TensorProto.INT64)]), {2}, ["sizer", "input"])
    add("conv_missing_weight.onnx", model([helper.make_node("Conv", ["x"], ["y"], name="lonely_conv")],
                                          [vi("x", [1, 1, 4, 4])], [vi("y", None)]), {2}, ["lonely_conv", "input"])
    # found by fuzz.importer: a Shape node without its output (the graph's output is its input); constant
    # folding ran the CPU kernel, which wrote the shape through the absent output's NULL pointer
    add("shape_without_output.onnx", model([helper.make_node("Shape", ["x"], [], name="shaper")],
                                           [vi("x", [3, 4, 5])], [vi("x", [3, 4, 5])]), {2}, ["shaper", "output"])
    # TopK's indices are required too: the kernel writes both outputs
    add("topk_without_indices.onnx",
        model([helper.make_node("TopK", ["x", "k"], ["v"], name="topper")], [vi("x", [2, 5])], [vi("v", None)],
              [numpy_helper.from_array(np.array([2], np.int64), "k")]), {2}, ["topper", "output"])

    # ---- 3. attributes ----
    bad_attr = helper.make_node("Conv", ["x", "w"], ["y"], name="conv_attr")
    bad_attr.attribute.append(helper.make_attribute("kernel_shape", "three"))
    w3 = numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "w")
    add("attr_wrong_type.onnx", model([bad_attr], [vi("x", [1, 1, 5, 5])], [vi("y", None)], [w3]), {2},
        ["kernel_shape", "conv_attr"])
    tr = helper.make_node("Transpose", ["x"], ["y"], name="tr")
    tr.attribute.append(helper.make_attribute("perm", [1.0, 0.0]))
    add("attr_floats_for_ints.onnx", model([tr], [vi("x", [2, 3])], [vi("y", [3, 2])]), {2}, ["perm", "tr"])
    und = helper.make_node("Transpose", ["x"], ["y"], name="tr_undef")
    und.attribute.append(AttributeProto(name="perm", type=AttributeProto.UNDEFINED))
    add("attr_undefined_type.onnx", model([und], [vi("x", [2, 3])], [vi("y", [3, 2])]), {2}, ["perm", "tr_undef"])
    add("cast_missing_to.onnx", model([helper.make_node("Cast", ["x"], ["y"], name="caster")],
                                      [vi("x", [2])], [vi("y", [2])]), {2}, ["caster", "'to'", "to"])
    add("cast_to_bogus_dtype.onnx", model([helper.make_node("Cast", ["x"], ["y"], name="caster", to=99)],
                                          [vi("x", [2])], [vi("y", [2])]), {2}, ["caster", "99"])
    add("transpose_perm_out_of_range.onnx", model([helper.make_node("Transpose", ["x"], ["y"], name="tperm",
                                                                     perm=[0, 7])],
                                                  [vi("x", [2, 3])], [vi("y", None)]), {2}, ["tperm", "perm"])
    add("conv_zero_stride.onnx", model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv_s0", strides=[0, 0])],
                                       [vi("x", [1, 1, 5, 5])], [vi("y", None)], [w3]), {2}, ["conv_s0", "stride"])
    add("conv_kernel_larger_than_input.onnx",
        model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv_big")], [vi("x", [1, 1, 2, 2])],
              [vi("y", None)], [w3]), {2}, ["conv_big"])
    w4 = numpy_helper.from_array(np.ones((4, 1, 1, 1), np.float32), "w")
    add("conv_group_mismatch.onnx", model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv_g", group=3)],
                                          [vi("x", [1, 4, 3, 3])], [vi("y", None)], [w4]), {2}, ["conv_g", "group"])
    # a group of 2^62 times W's dim 1 overflowed int64 in the channel check (UBSan, Conv / ConvTranspose /
    # QLinearConv / ConvInteger; ConvTranspose with no input channels, where any group divides them)
    add("conv_group_huge.onnx", model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv_gh", group=1 << 62)],
                                      [vi("x", [1, 16, 3, 3])], [vi("y", None)], [w4]), {2}, ["conv_gh", "group"])
    w04 = numpy_helper.from_array(np.ones((0, 4, 1, 1), np.float32), "w")
    add("conv_transpose_group_huge.onnx",
        model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="convt_gh", group=1 << 62)],
              [vi("x", [1, 0, 3, 3])], [vi("y", None)], [w04]), {2}, ["convt_gh", "group"])
    wq = numpy_helper.from_array(np.ones((4, 4, 1, 1), np.int8), "wq")
    qs = [numpy_helper.from_array(np.array(0.1, np.float32), "qs"), numpy_helper.from_array(np.array(0, np.uint8), "qz"),
          numpy_helper.from_array(np.array(0, np.int8), "wz")]
    add("qlinearconv_group_huge.onnx",
        model([helper.make_node("QLinearConv", ["x", "qs", "qz", "wq", "qs", "wz", "qs", "qz"], ["y"], name="qconv_gh",
                                group=1 << 62)], [vi("x", [1, 16, 3, 3], TensorProto.UINT8)],
              [vi("y", None, TensorProto.UINT8)], [wq] + qs), {2}, ["qconv_gh", "group"])
    # sampling_ratio 2^16 (the old limit): 2^32 samples per output bin, minutes of work (fuzz.importer timeout)
    add("roialign_sampling_huge.onnx",
        model([helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], name="roi_sr", sampling_ratio=1 << 16,
                                output_height=2, output_width=5)],
              [vi("x", [1, 1, 10, 10]), vi("rois", [3, 4]), vi("bi", [3], TensorProto.INT64)], [vi("y", None)]), {2},
        ["roi_sr", "sampling_ratio"])
    # NaN and infinite roi coordinates (found by fuzz.importer: a NaN sample count converted to an integer is
    # undefined behaviour): an answer, no sanitizer report
    rois = numpy_helper.from_array(np.array([[np.nan, 0, 5, 5], [0, np.inf, 3, -np.inf], [1e30, 1e30, -1e30, 2]],
                                            np.float32), "rois")
    bis = numpy_helper.from_array(np.zeros(3, np.int64), "bi")
    add("roialign_nan_rois.onnx",
        model([helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], name="roi_nan", output_height=2, output_width=3)],
              [vi("x", [1, 2, 10, 10])], [vi("y", None)], [rois, bis]), {0}, [])
    # max_skip_count 2^40 over rows of 65,535 tokens: 2 x 10^9 windows a row (fuzz.importer timeout); refused at run
    add("tfidf_skip_huge.onnx",
        model([helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf_skip", mode="TF", min_gram_length=2,
                                max_gram_length=2, max_skip_count=1 << 40, ngram_counts=[0, 0],
                                ngram_indexes=[0, 1], pool_int64s=[2, 3, 5, 4])],
              [vi("x", [2, 65535], TensorProto.INT32)], [vi("y", None)]), {1}, ["tfidf_skip", "max_skip_count"])
    # no ngram_counts (so no pool n-gram) with max_skip_count 2^31 over rows of 65,535 tokens: nothing can match,
    # but the kernel still walked 2 x 10^9 windows (50 s in the fuzz build: fuzz.importer timeout). Runs: zeros
    add("tfidf_empty_pool_skip.onnx",
        model([helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf_empty", mode="TF", min_gram_length=2,
                                max_gram_length=2, max_skip_count=1 << 31, ngram_indexes=[0, 1],
                                pool_int64s=[2, 3, 5, 4])],
              [vi("x", [2, 65535], TensorProto.INT32)], [vi("y", None)]), {0}, [])
    add("convinteger_group_huge.onnx",
        model([helper.make_node("ConvInteger", ["x", "wq"], ["y"], name="convi_gh", group=1 << 62)],
              [vi("x", [1, 16, 3, 3], TensorProto.UINT8)], [vi("y", None, TensorProto.INT32)], [wq]), {2},
        ["convi_gh", "group"])
    # found by mutating attributes of the node tests: pads of 2^31 make the output dims ~2^32, whose
    # product overflows int64 in the CPU kernels (UB in conv.c; ConvInteger crashed)
    big = 1 << 31
    add("conv_huge_pads.onnx", model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv_pad", pads=[big] * 4)],
                                     [vi("x", [1, 1, 5, 5])], [vi("y", None)], [w3]), {1, 2},
        ["conv_pad", "large", "overflow"])
    # the same at batch 0 (no element to overflow the tensor's bytes): the CPU kernel's plane sizes overflowed
    # int64 (UB in conv.c's geometry, found by fuzz.importer)
    add("conv_huge_pads_batch0.onnx", model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv_pad", pads=[big] * 4)],
                                            [vi("x", [0, 1, 5, 5])], [vi("y", None)], [w3]), {0, 1, 2},
        ["conv_pad", "geometry", "large", "overflow"])
    wq = numpy_helper.from_array(np.ones((1, 1, 2, 2), np.uint8), "wq")
    add("convinteger_huge_pads.onnx",
        model([helper.make_node("ConvInteger", ["x", "wq"], ["y"], name="convint_pad", pads=[big] * 4)],
              [vi("x", [1, 1, 3, 3], TensorProto.UINT8)], [vi("y", None, TensorProto.INT32)], [wq], opset=10), {1, 2},
        ["convint_pad", "large", "overflow"])
    add("concat_axis_out_of_range.onnx", model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=5)],
                                               [vi("x", [2, 3])], [vi("y", None)]), {2}, ["cat", "axis"])

    # ---- 4. dims and dtypes ----
    add("negative_dim.onnx", relu_model((2, -5)), {2}, ["-5", "'x'", "dim"])
    add("huge_dim.onnx", relu_model((1 << 62,)), {1, 2}, ["'x'", "bytes", "memory", "large"])
    add("dims_overflow_product.onnx", relu_model((1 << 40, 1 << 40)), {1, 2}, ["'x'", "overflow", "large",
                                                                               "bytes"])
    add("rank_9.onnx", relu_model((1,) * 9), {2}, ["rank", "'x'"])
    add("zero_size_dim.onnx", relu_model((0, 3)), {0}, [])
    add("zero_size_conv_batch.onnx", model([helper.make_node("Conv", ["x", "w"], ["y"], name="c0")],
                                           [vi("x", [0, 1, 5, 5])], [vi("y", None)], [w3]), {0, 2}, ["c0", "0"])
    add("input_dtype_undefined.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                            [vi("x", [2], 0)], [vi("y", [2])]), {2}, ["'x'", "type", "dtype"])
    add("input_dtype_99.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                                     [vi("x", [2], 99)], [vi("y", [2])]), {2}, ["'x'", "99"])
    add("string_input_to_add.onnx", model([helper.make_node("Add", ["x", "x"], ["y"], name="str_add")],
                                          [vi("x", [2], TensorProto.STRING)], [vi("y", [2], TensorProto.STRING)]),
        {1, 2}, ["str_add", "string"])
    add("matmul_shape_mismatch.onnx", model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                                            [vi("a", [2, 3]), vi("b", [4, 5])], [vi("y", None)]), {2}, ["mm"])

    # ---- 5. initializers ----
    t = rawt("w", TensorProto.FLOAT, [10], b"\x00" * 4)
    add("raw_data_short.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [vi("x", [10])],
                                     [vi("y", [10])], [t]), {2}, ["'w'", "bytes"])
    t = rawt("w", TensorProto.FLOAT, [2], b"\x00" * 100)
    add("raw_data_long.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [vi("x", [2])],
                                    [vi("y", [2])], [t]), {2}, ["'w'", "bytes"])
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[5], float_data=[1.0, 2.0, 3.0])
    add("float_data_count_mismatch.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="a")],
                                                [vi("x", [5])], [vi("y", [5])], [t]), {2}, ["'w'", "3", "5"])
    t = rawt("w", TensorProto.FLOAT, [-1, 4], b"\x00" * 16)
    add("initializer_negative_dim.onnx", model([helper.make_node("Relu", ["w"], ["y"], name="r")], [],
                                               [vi("y", None)], [t]), {2}, ["'w'", "-1"])
    t = rawt("w", TensorProto.FLOAT, [1 << 31, 1 << 31], b"")
    add("initializer_huge_no_data.onnx", model([helper.make_node("Relu", ["w"], ["y"], name="r")], [],
                                               [vi("y", None)], [t]), {2}, ["'w'", "bytes", "limit"])
    t = rawt("w", TensorProto.FLOAT, [1 << 32, 1 << 32, 1 << 32], b"")
    add("initializer_dims_overflow.onnx", model([helper.make_node("Relu", ["w"], ["y"], name="r")], [],
                                                [vi("y", None)], [t]), {2}, ["'w'", "overflow", "bytes", "limit"])
    t = rawt("w", 0, [2], b"\x00" * 8)
    add("initializer_dtype_undefined.onnx", model([helper.make_node("Relu", ["w"], ["y"], name="r")], [],
                                                  [vi("y", None)], [t]), {2}, ["'w'", "type"])
    t = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    t.data_location = TensorProto.EXTERNAL  # claims external, names no file
    add("external_no_location.onnx", model([helper.make_node("Relu", ["w"], ["y"], name="r")], [],
                                           [vi("y", None)], [t]), {2}, ["'w'", "location", "external"])

    def ext(name, location, offset=None, length=None, dims=(4,)):
        t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=list(dims))
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", offset), ("length", length)):
            if v is not None:
                e = t.external_data.add()
                e.key, e.value = k, str(v)
        return model([helper.make_node("Relu", ["w"], ["y"], name="r")], [], [vi("y", None)], [t])

    add("external_parent_dir.onnx", ext("w", "../../../../etc/passwd"), {2}, ["'w'", "..", "outside"])
    add("external_absolute.onnx", ext("w", "/etc/passwd"), {2}, ["'w'", "/etc/passwd", "absolute", "outside"])
    add("external_missing_file.onnx", ext("w", "no_such_weights.bin"), {2}, ["no_such_weights.bin"])
    add("external_offset_past_end.onnx", ext("w", "corpus_weights.bin", offset=1000, length=16), {2},
        ["corpus_weights.bin", "1000", "past", "end"])
    add("external_length_past_end.onnx", ext("w", "corpus_weights.bin", offset=48, length=64, dims=(16,)), {2},
        ["corpus_weights.bin", "past", "end", "64"])
    add("external_length_mismatch.onnx", ext("w", "corpus_weights.bin", offset=0, length=8, dims=(16,)), {2},
        ["'w'", "8", "64"])
    add("external_negative_offset.onnx", ext("w", "corpus_weights.bin", offset=-8, length=16), {2},
        ["'w'", "offset", "-8"])
    add("external_is_directory.onnx", ext("w", "."), {2}, ["'w'", "director", "."])

    # ---- 6. ops, domains, opsets ----
    add("unknown_op.onnx", model([helper.make_node("FrobnicateOp", ["x"], ["y"], name="frob")],
                                 [vi("x", [2])], [vi("y", [2])]), {1, 2}, ["FrobnicateOp"])
    add("unknown_domain.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="evil", domain="com.evil")],
                                     [vi("x", [2])], [vi("y", [2])], domains=[("com.evil", 1)]), {1, 2},
        ["com.evil"])
    add("domain_not_imported.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.nope")],
                                          [vi("x", [2])], [vi("y", [2])]), {1, 2}, ["com.nope"])
    add("opset_999.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2])],
                                [vi("y", [2])], opset=999), {2}, ["999", "opset"])
    m = relu_model()
    del m.opset_import[:]
    add("no_opset_import.onnx", m, {0, 2}, ["opset"])

    # ---- 7. shape ops ----
    shp = numpy_helper.from_array(np.array([7], np.int64), "shape")
    add("reshape_wrong_count.onnx", model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")],
                                          [vi("x", [2, 3])], [vi("y", None)], [shp]), {2}, ["rs", "7", "6"])
    shp = numpy_helper.from_array(np.array([-1, -1], np.int64), "shape")
    add("reshape_two_minus_one.onnx", model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")],
                                            [vi("x", [2, 3])], [vi("y", None)], [shp]), {2}, ["rs", "-1"])
    shp = numpy_helper.from_array(np.array([0, 0, 0], np.int64), "shape")
    add("reshape_zero_past_rank.onnx", model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")],
                                             [vi("x", [2, 3])], [vi("y", None)], [shp]), {2}, ["rs"])
    shp = numpy_helper.from_array(np.array([1 << 40, 1 << 40], np.int64), "shape")
    add("constant_of_shape_huge.onnx", model([helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos")],
                                             [], [vi("y", None)], [shp]), {1, 2}, ["cos", "bytes", "memory",
                                                                                   "large", "overflow"])
    shp = numpy_helper.from_array(np.array([1 << 20, 1 << 20], np.int64), "shape")
    add("expand_huge.onnx", model([helper.make_node("Expand", ["x", "shape"], ["y"], name="exp")],
                                  [vi("x", [1, 1])], [vi("y", None)], [shp]), {1, 2}, ["exp", "bytes", "memory",
                                                                                     "large"])
    idx = numpy_helper.from_array(np.array([100], np.int64), "idx")
    add("gather_index_out_of_range.onnx", model([helper.make_node("Gather", ["x", "idx"], ["y"], name="gat")],
                                                [vi("x", [3, 2])], [vi("y", None)], [idx]), {1, 2}, ["gat", "100"])
    sp = numpy_helper.from_array(np.array([2, 2], np.int64), "sp")
    add("split_sizes_wrong_sum.onnx", model([helper.make_node("Split", ["x", "sp"], ["a", "b"], name="spl")],
                                            [vi("x", [5])], [vi("a", None), vi("b", None)], [sp]), {2}, ["spl"])

    # ---- 8. control flow ----
    def branch(n_out, tag):
        outs = [vi(f"{tag}_o{i}", [2]) for i in range(n_out)]
        nodes = [helper.make_node("Identity", ["x"], [f"{tag}_o{i}"], name=f"{tag}_id{i}") for i in range(n_out)]
        return helper.make_graph(nodes, tag, [], outs)

    cond = numpy_helper.from_array(np.array(True), "cond")
    add("if_branch_output_count.onnx",
        model([helper.make_node("If", ["cond"], ["y"], name="iffy", then_branch=branch(2, "then"),
                                else_branch=branch(1, "else"))], [vi("x", [2])], [vi("y", [2])], [cond]), {2},
        ["iffy", "output"])
    # If inside If 40 deep, past the default max_graph_depth (32). Written as raw bytes: Python's protobuf
    # refuses to build messages nested that deep.
    def if_node(out, name, then_g, else_g):
        attrs = [ld(5, ld(1, k) + ld(6, gb) + key(20, 0) + varint(AttributeProto.GRAPH))
                 for k, gb in ((b"then_branch", then_g), (b"else_branch", else_g))]
        return ld(1, b"cond") + ld(2, out.encode()) + ld(3, name.encode()) + ld(4, b"If") + b"".join(attrs)

    def graph_bytes(nodes, name, out):
        return b"".join(ld(1, n) for n in nodes) + ld(2, name.encode()) + ld(12, vi(out, [2]).SerializeToString())

    g = branch(1, "leaf").SerializeToString()
    for d in range(40):
        g = graph_bytes([if_node(f"d{d}", f"if_{d}", g, branch(1, f"e{d}").SerializeToString())], f"lvl{d}",
                        f"d{d}")
    top = model([], [vi("x", [2])], [vi("d39", [2])], [cond])
    top_graph = top.graph.SerializeToString()
    top.ClearField("graph")
    add("if_nested_40.onnx", top.SerializeToString() + ld(7, top_graph + ld(1, if_node("d39", "top_if", g, g))),
        {2}, ["depth", "deep", "nested"])
    cap = helper.make_graph([helper.make_node("Add", ["x", "not_there"], ["c_o"], name="cap_add")], "cap", [],
                            [vi("c_o", [2])])
    add("if_capture_undefined.onnx",
        model([helper.make_node("If", ["cond"], ["y"], name="iffy", then_branch=cap, else_branch=cap)],
              [vi("x", [2])], [vi("y", [2])], [cond]), {2}, ["not_there"])
    # Loop whose condition stays true: the trip count input M=3 ends it (M absent would only stop at the
    # runtime's iteration cap, see --hang-cases)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"], name="double")],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2])])
    trip = numpy_helper.from_array(np.array(3, np.int64), "M")
    add("loop_cond_true_with_trip_count.onnx",
        model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="looper", body=body)],
              [vi("x", [2])], [vi("y", [2])], [trip, cond]), {0}, [])
    # the loop-carried value given as "" (absent), trip count and condition as graph inputs, with a scan
    # output (as onnx's test_loop11 with its third input blanked)
    body_scan = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"], name="double"),
         helper.make_node("Identity", ["acc_out"], ["scan_out"], name="collect")],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [1])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [1]), vi("scan_out", [1])])
    add("loop_absent_carried_value.onnx",
        model([helper.make_node("Loop", ["M", "c", ""], ["y", "ys"], name="loop_gap", body=body_scan)],
              [vi("M", [], TensorProto.INT64), vi("c", [], TensorProto.BOOL), vi("x", [1])],
              [vi("y", [1]), vi("ys", None)], opset=11), {1, 2}, ["loop_gap", "input", "acc_in"])
    bad_body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"], name="k")], "bb",
                                 [vi("cond_in", [], TensorProto.BOOL)], [vi("cond_out", [], TensorProto.BOOL)])
    # No trip count and a condition that stays true: only the runtime's iteration cap ends it (option
    # limits.max_loop_iterations, default 1,000,000 per run: seconds in a debug build, so the test lowers it)
    for name, m in hang_cases().items():
        add(name, m, {1}, ["forever", "max_loop_iterations"], ["--set", "limits.max_loop_iterations=100000"])
    add("loop_body_wrong_arity.onnx",
        model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="bad_loop", body=bad_body)],
              [vi("x", [2])], [vi("y", [2])], [trip, cond]), {2}, ["bad_loop"])


def fn(name, inputs, outputs, nodes, domain="local", attributes=(), defaults=()):
    f = helper.make_function(domain, name, inputs, outputs, nodes,
                             [helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)], attributes=list(attributes))
    for k, v in defaults:
        f.attribute_proto.append(helper.make_attribute(k, v))
    return f


def ref_attr(name, ref, atype=AttributeProto.FLOAT):
    return AttributeProto(name=name, type=atype, ref_attr_name=ref)


def fn_model(nodes, functions, inputs=None, outputs=None):
    m = model(nodes, inputs or [vi("x", [2])], outputs or [vi("y", [2])], domains=[("local", 1)])
    m.functions.extend(functions)
    return m


def build_round_two():
    """Hostile models, round two: the ONNX graph rules (branch and body types, opsets per domain), model-local
    functions gone wrong, Range and Slice at the limits, host memory exhaustion (run with a small
    --host-memory), and option values that must not silently remove a limit."""
    cond = numpy_helper.from_array(np.array(True), "cond")
    # ---- If / Loop / Scan signatures ----
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t_o"], name="t_id")], "then", [], [vi("t_o", [2])])
    else_g = helper.make_graph([helper.make_node("Cast", ["x"], ["e_o"], name="e_cast", to=TensorProto.INT64)],
                               "else", [], [vi("e_o", [2], TensorProto.INT64)])
    add("if_branch_dtype_mismatch.onnx",
        model([helper.make_node("If", ["cond"], ["y"], name="iffy", then_branch=then_g, else_branch=else_g)],
              [vi("x", [2])], [vi("y", [2])], [cond]), {2}, ["iffy", "then_branch", "else_branch"])
    # the branches declare nothing; the If output is declared float, the branch taken makes int64: refused at run
    und_t = helper.make_graph([helper.make_node("Cast", ["x"], ["t_o"], name="t_cast", to=TensorProto.INT64)], "then",
                              [], [vi("t_o", None, 0)])
    und_e = helper.make_graph([helper.make_node("Identity", ["x"], ["e_o"], name="e_id")], "else", [],
                              [vi("e_o", None, 0)])
    add("if_branch_output_type_at_run.onnx",
        model([helper.make_node("If", ["cond"], ["y"], name="iffy", then_branch=und_t, else_branch=und_e)],
              [vi("x", [2])], [vi("y", [2])], [cond]), {1, 2}, ["iffy", "declared", "int64"])
    trip = numpy_helper.from_array(np.array(3, np.int64), "M")
    fbody = helper.make_graph(
        [helper.make_node("Cast", ["cond_in"], ["cond_out"], name="float_cond", to=TensorProto.FLOAT),
         helper.make_node("Identity", ["acc_in"], ["acc_out"], name="same")],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], TensorProto.FLOAT), vi("acc_out", [2])])
    add("loop_cond_float.onnx", model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="floaty", body=fbody)],
                                      [vi("x", [2])], [vi("y", [2])], [trip, cond]), {2}, ["floaty", "condition", "bool"])
    ibody = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="k"),
         helper.make_node("Identity", ["acc_in"], ["acc_out"], name="same")],
        "body", [vi("i", [], TensorProto.FLOAT), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2])])
    add("loop_iteration_float.onnx", model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="it_f", body=ibody)],
                                           [vi("x", [2])], [vi("y", [2])], [trip, cond]), {2}, ["it_f", "iteration", "int64"])
    cbody = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="k"),
         helper.make_node("Cast", ["acc_in"], ["acc_out"], name="to_int", to=TensorProto.INT32)],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2], TensorProto.INT32)])
    add("loop_carried_type_change.onnx",
        model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="morph", body=cbody)], [vi("x", [2])],
              [vi("y", [2])], [trip, cond]), {2}, ["morph", "carried", "int32"])
    xbody = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"], name="k"),
                               helper.make_node("Identity", ["acc_in"], ["acc_out"], name="same")],
                              "body", [vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
                              [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2])])
    add("loop_body_missing_iteration.onnx",
        model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="short", body=xbody)], [vi("x", [2])],
              [vi("y", [2])], [trip, cond]), {2}, ["short", "inputs"])
    sbody = helper.make_graph([helper.make_node("Add", ["s_in", "x_in"], ["s_out"], name="acc")], "sbody",
                              [vi("s_in", [2]), vi("x_in", [2]), vi("extra", [2])], [vi("s_out", [2])])
    add("scan_body_arity.onnx",
        model([helper.make_node("Scan", ["x0", "xs"], ["y"], name="scanner", body=sbody, num_scan_inputs=1)],
              [vi("x0", [2]), vi("xs", [3, 2])], [vi("y", [2])]), {2}, ["scanner", "inputs"])
    # ---- opsets per domain ----
    add("ml_opset_99.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2])], [vi("y", [2])],
                                  domains=[("ai.onnx.ml", 99)]), {2}, ["ai.onnx.ml", "99"])
    add("opset_0.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2])], [vi("y", [2])],
                              opset=0), {2}, ["opset", "0"])
    # ---- Range ----
    for tag, (st, lim, dl) in {"nan_delta": (0.0, 10.0, float("nan")), "inf_limit": (0.0, float("inf"), 1.0),
                               "zero_delta": (0.0, 10.0, 0.0)}.items():
        inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("s", st), ("l", lim), ("d", dl))]
        add(f"range_{tag}.onnx", model([helper.make_node("Range", ["s", "l", "d"], ["y"], name="ranger")], [],
                                       [vi("y", None)], inits), {1, 2}, ["ranger", "delta", "limit", "finite", "zero"])
    # the same NaN delta given at run time (a graph input): refused when the node is inferred before it runs
    add("range_nan_delta_input.onnx",
        model([helper.make_node("Range", ["s", "l", "d"], ["y"], name="ranger")],
              [vi("d", [])], [vi("y", None)],
              [numpy_helper.from_array(np.array(0, np.float32), "s"),
               numpy_helper.from_array(np.array(1e30, np.float32), "l")]), {0, 1, 2}, ["ranger", "elements"])
    # ---- model-local functions ----
    rec = fn("Rec", ["a"], ["b"], [helper.make_node("Rec", ["a"], ["b"], domain="local", name="again")])
    add("function_recursive.onnx", fn_model([helper.make_node("Rec", ["x"], ["y"], domain="local", name="call")], [rec]),
        {2}, ["Rec", "recursive"])
    ping = fn("Ping", ["a"], ["b"], [helper.make_node("Pong", ["a"], ["b"], domain="local", name="to_pong")])
    pong = fn("Pong", ["a"], ["b"], [helper.make_node("Ping", ["a"], ["b"], domain="local", name="to_ping")])
    add("function_mutual_recursion.onnx",
        fn_model([helper.make_node("Ping", ["x"], ["y"], domain="local", name="call")], [ping, pong]), {2},
        ["Ping", "recursive"])
    # 2^30 nodes once expanded (each level calls the one below twice): refused after a bounded amount of work
    levels = [fn("L0", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"], name="leaf")])]
    for k in range(1, 31):
        levels.append(fn(f"L{k}", ["a"], ["b"], [helper.make_node(f"L{k-1}", ["a"], ["m"], domain="local", name="one"),
                                                  helper.make_node(f"L{k-1}", ["m"], ["b"], domain="local", name="two")]))
    add("function_exponential.onnx",
        fn_model([helper.make_node("L30", ["x"], ["y"], domain="local", name="call")], levels), {2},
        ["nodes", "expanding"])
    chain = [fn("C0", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"], name="leaf")])]
    for k in range(1, 100):
        chain.append(fn(f"C{k}", ["a"], ["b"], [helper.make_node(f"C{k-1}", ["a"], ["b"], domain="local", name="down")]))
    add("function_nested_100.onnx",
        fn_model([helper.make_node("C99", ["x"], ["y"], domain="local", name="call")], chain), {2}, ["nested", "deeper"])
    scale = fn("Scale", ["a"], ["b"], [helper.make_node("Constant", [], ["k"], name="k"),
                                       helper.make_node("Mul", ["a", "k"], ["b"], name="mul")], attributes=["alpha"])
    scale.node[0].attribute.append(ref_attr("value_float", "alpha"))
    add("function_missing_attribute.onnx",
        fn_model([helper.make_node("Scale", ["x"], ["y"], domain="local", name="call")], [scale]), {2},
        ["alpha", "Constant"])
    add("function_unknown_attribute.onnx",
        fn_model([helper.make_node("Scale", ["x"], ["y"], domain="local", name="call", alpha=2.0, beta=3.0)], [scale]),
        {2}, ["beta", "Scale"])
    stray = helper.make_node("LeakyRelu", ["x"], ["y"], name="stray")
    stray.attribute.append(ref_attr("alpha", "gain"))
    add("ref_attr_outside_function.onnx", model([stray], [vi("x", [2])], [vi("y", [2])]), {2}, ["gain", "function"])
    add("function_defined_twice.onnx",
        fn_model([helper.make_node("Scale", ["x"], ["y"], domain="local", name="call", alpha=2.0)], [scale, scale]),
        {2}, ["Scale", "twice"])
    # ---- host memory: a Loop whose carried value doubles, and one whose scan output grows 1 MiB an iteration ----
    dbody = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Concat", ["acc_in", "acc_in"], ["acc_out"], name="double", axis=0)],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", None)],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", None)])
    big_trip = numpy_helper.from_array(np.array(40, np.int64), "M")
    add("loop_carried_doubling.onnx",
        model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="doubler", body=dbody)],
              [vi("x", [1024])], [vi("y", None)], [big_trip, cond]), {1}, ["host memory budget", "limits.host_memory"],
        ["--host-memory", "128M"])
    shape = numpy_helper.from_array(np.array([262144], np.int64), "mib_shape")
    gbody = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Identity", ["acc_in"], ["acc_out"], name="same"),
         helper.make_node("ConstantOfShape", ["mib_shape"], ["mib"], name="one_mib",
                          value=numpy_helper.from_array(np.array([1.0], np.float32)))],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2]), vi("mib", [262144])], [shape])
    add("loop_scan_output_growth.onnx",
        model([helper.make_node("Loop", ["M", "cond", "x"], ["y", "ys"], name="grower", body=gbody)],
              [vi("x", [2])], [vi("y", [2]), vi("ys", None)],
              [numpy_helper.from_array(np.array(100000, np.int64), "M"), cond]), {1},
        ["host memory budget", "scan outputs"], ["--host-memory", "64M"])
    # found by fuzz.importer with the structure-aware mutator: Size of an input declared [2, 2^63 - 1, 4]; the
    # CPU kernel's element count overflowed int64 when the node was folded at prepare
    add("size_of_overflowing_dims.onnx",
        model([helper.make_node("Size", ["data"], ["n"], name="sizer")], [vi("data", [2, (1 << 63) - 1, 4])],
              [vi("n", [], TensorProto.INT64)]), {2}, ["'data'", "would have", "too large"])
    # found by fuzz.importer once it ran models: a 3 x (2^31 - 1) AveragePool window over a 5 x 5 input (SAME_UPPER
    # pads); the CPU kernel visited every tap of every window, padding included (minutes): now only those inside
    add("averagepool_kernel_2e31.onnx",
        model([helper.make_node("AveragePool", ["x"], ["y"], name="wide_pool", kernel_shape=[3, (1 << 31) - 1],
                                strides=[2, 2], auto_pad="SAME_UPPER")], [vi("x", [1, 1, 5, 5])], [vi("y", None)]),
        {0}, [])
    # integer division at the edges: INT_MIN / -1 wraps to INT_MIN (as numpy); x / 0 is an error naming the node
    # (the x86 division instruction traps on both: a kernel that divides as C does kills the process)
    a = numpy_helper.from_array(np.array([-(1 << 31), 7], np.int32), "a")
    for tag, b, codes, words in (("min_by_minus_one", [-1, 2], {0}, []), ("by_zero", [1, 0], {1}, ["divider", "zero"])):
        add(f"int_div_{tag}.onnx",
            model([helper.make_node("Div", ["a", "b"], ["y"], name="divider")], [], [vi("y", [2], TensorProto.INT32)],
                  [a, numpy_helper.from_array(np.array(b, np.int32), "b")]), codes, words)
    # ---- option values that would remove a limit ----
    for tag, arg in {"text": "limits.max_loop_iterations=abc", "zero": "limits.max_loop_iterations=0",
                     "negative": "limits.max_loop_iterations=-5", "typo": "limits.max_loop_iteration=10"}.items():
        add(f"option_loop_cap_{tag}.onnx", hang_cases()["loop_infinite.onnx"], {2}, ["limits.max_loop_iteration"],
            ["--set", arg])
    add("option_host_memory_bad.onnx", relu_model(), {2}, ["limits.host_memory"], ["--host-memory", "lots"])
    # found by fuzz.importer: a Momentum whose second X and G are empty names (absent inputs); the check that each
    # group has X's shape compared their unknown ranks with a memcmp of -8 bytes
    f32 = TensorProto.FLOAT
    add("momentum_missing_inputs.onnx",
        model([helper.make_node("Momentum", ["R", "T", "X1", "", "G1", "", "H1", "H2"], ["X1n", "X2n", "V1n", "V2n"],
                                name="momentum0", domain="ai.onnx.preview.training", alpha=0.95, beta=0.85,
                                mode="standard", norm_coefficient=0.001)],
              [vi("R", [], f32), vi("T", [], TensorProto.INT64), vi("X1", [1]), vi("G1", [1]), vi("H1", [1]),
               vi("H2", [2])], [vi(n, None) for n in ("X1n", "X2n", "V1n", "V2n")],
              domains=[("ai.onnx.preview.training", 1)]),
        {2}, ["missing"])


def valid_round_two():
    """Models that must run: a graph input with an initializer (its default value), and model-local functions
    called twice, nested, with attributes taken from the call, defaults and a Constant fed by an attribute, and
    an If inside a function body reading the function's values."""
    w = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "w")
    default_input = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", [3]), vi("w", [3])],
                          [vi("y", [3])], [w])
    k = helper.make_node("Constant", [], ["k"], name="k")
    k.attribute.append(ref_attr("value_float", "alpha"))
    scale_relu = fn("ScaleRelu", ["a"], ["b"], [k, helper.make_node("Mul", ["a", "k"], ["t"], name="mul"),
                                                helper.make_node("Relu", ["t"], ["b"], name="relu")],
                    defaults=[("alpha", 2.0)])
    inner = helper.make_node("ScaleRelu", ["a"], ["s1"], domain="local", name="scaled")
    inner.attribute.append(ref_attr("alpha", "beta"))
    leaky = helper.make_node("LeakyRelu", ["a"], ["lr"], name="leaky")
    leaky.attribute.append(ref_attr("alpha", "beta"))
    then_g = helper.make_graph([helper.make_node("Add", ["s1", "lr"], ["o_then"], name="plus")], "then", [],
                               [vi("o_then", None)])
    else_g = helper.make_graph([helper.make_node("Sub", ["s1", "lr"], ["o_else"], name="minus")], "else", [],
                               [vi("o_else", None)])
    combo = fn("Combo", ["a"], ["z"], [
        inner, helper.make_node("ScaleRelu", ["a"], ["s2"], domain="local", name="default_scale"), leaky,
        helper.make_node("ReduceSum", ["a"], ["sum"], name="total", keepdims=0),
        helper.make_node("Constant", [], ["zero"], name="zero", value=helper.make_tensor("z", TensorProto.FLOAT, [], [0.0])),
        helper.make_node("Greater", ["sum", "zero"], ["c"], name="positive"),
        helper.make_node("If", ["c"], ["iff"], name="choose", then_branch=then_g, else_branch=else_g),
        helper.make_node("Add", ["iff", "s2"], ["z"], name="out")], attributes=["beta"])
    functions = fn_model([helper.make_node("Combo", ["x"], ["y1"], domain="local", name="first", beta=0.5),
                          helper.make_node("Combo", ["y1"], ["y"], domain="local", name="second", beta=0.25)],
                         [scale_relu, combo], [vi("x", [2, 3])], [vi("y", [2, 3])])
    # LRN's size is any positive int64; a window wider than the channels covers them all (found by the fuzzer:
    # size 2^62 overflowed the kernel's work estimate)
    lrn = model([helper.make_node("LRN", ["x"], ["y"], name="wide_lrn", size=1 << 62, alpha=1e18, bias=2.0)],
                [vi("x", [1, 3, 2, 2])], [vi("y", [1, 3, 2, 2])])
    # TfIdfVectorizer with skips over a pool of distinct uni-, bi- and trigrams (onnxruntime refuses repeats): the
    # kernel finds pool n-grams by hash; onnxruntime's counts
    rng = np.random.default_rng(7)
    grams = {1: [], 2: [], 3: []}
    for n, want in ((1, 6), (2, 40), (3, 30)):
        while len(grams[n]) < want:
            g = tuple(int(t) for t in rng.integers(0, 12, n))
            if g not in grams[n]:
                grams[n].append(g)
    pool = [t for n in (1, 2, 3) for g in grams[n] for t in g]
    n_grams = 6 + 40 + 30
    tfidf = model([helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf_pool", mode="TFIDF",
                                    min_gram_length=1, max_gram_length=3, max_skip_count=3,
                                    ngram_counts=[0, 6, 86], ngram_indexes=list(range(n_grams)), pool_int64s=pool,
                                    weights=(rng.random(n_grams) + 0.5).astype(np.float32).tolist())],
                  [vi("x", [3, 300], TensorProto.INT64)], [vi("y", None)])
    return {"default_input": (default_input, np.array([10.0, 20.0, 30.0], np.float32)),
            "tfidf_pool_skip": (tfidf, rng.integers(0, 12, (3, 300)).astype(np.int64)),
            "functions_nested": (functions, np.array([[1, -2, 3], [-4, 5, -6]], np.float32)),
            "lrn_size_huge": (lrn, np.arange(-6, 6, dtype=np.float32).reshape(1, 3, 2, 2) / 4),
            "layer_norm_empty_rows": (layer_norm_empty_rows(), np.zeros((3, 0), np.float32))}


def layer_norm_empty_rows():
    """LayerNormalization over no elements per row (X [3, 0], axis 1): Mean and InvStdDev of each row are 0/0,
    NaN as onnx's reference gives them; the CPU kernel (ai.onnx) and the contrib plugin (com.microsoft) left them
    unwritten (found by the fuzz sweep). y: IsNaN of the four statistics as float, all ones."""
    g = numpy_helper.from_array(np.zeros((0,), np.float32), "g")
    nodes = [helper.make_node("LayerNormalization", ["x", "g"], ["ln_y", "ln_m", "ln_i"], name="ln_cpu", axis=1),
             helper.make_node("LayerNormalization", ["x", "g"], ["ms_y", "ms_m", "ms_i"], name="ln_contrib", axis=1,
                              domain="com.microsoft")]
    stats = ["ln_m", "ln_i", "ms_m", "ms_i"]
    nodes += [helper.make_node("IsNaN", [v], [v + "_nan"], name=v + "_isnan") for v in stats]
    nodes += [helper.make_node("Concat", [v + "_nan" for v in stats], ["nan"], name="all", axis=1),
              helper.make_node("Cast", ["nan"], ["y"], name="as_float", to=TensorProto.FLOAT)]
    return model(nodes, [vi("x", [3, 0])], [vi("y", [3, 4])], [g], domains=[("com.microsoft", 1)])


def reference_output(name, m, x):
    """The expected output: numpy's LRN for the wide window (every channel in it), onnxruntime's otherwise."""
    if name == "layer_norm_empty_rows":  # onnxruntime refuses a LayerNormalization over no elements
        return np.ones((3, 4), np.float32)
    if name == "lrn_size_huge":
        xd = x.astype(np.float64)
        sq = (xd * xd).sum(axis=1, keepdims=True)
        return (xd / (2.0 + 1e18 / float(1 << 62) * sq) ** 0.75).astype(np.float32)
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def hang_cases():
    """Loops that only the runtime's iteration cap ends (option limits.max_loop_iterations, default 1,000,000
    Loop iterations per run, nested loops included): no trip count with a condition that stays true; a trip
    count of 2^62; an endless loop inside an endless loop (a per-loop cap would multiply)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Identity", ["acc_in"], ["acc_out"], name="same")],
        "body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    huge = numpy_helper.from_array(np.array(1 << 62, np.int64), "M")
    inner = helper.make_node("Loop", ["", "cond_in", "acc_in"], ["acc_out"], name="forever_inner", body=body)
    outer_body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going_outer"), inner],
        "outer_body", [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("acc_in", [2])],
        [vi("cond_out", [], TensorProto.BOOL), vi("acc_out", [2])])
    return {
        "loop_infinite.onnx": model([helper.make_node("Loop", ["", "cond", "x"], ["y"], name="forever",
                                                      body=body)], [vi("x", [2])], [vi("y", [2])], [cond]),
        "loop_trip_count_2e62.onnx": model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="forever_m",
                                                             body=body)], [vi("x", [2])], [vi("y", [2])],
                                           [huge, cond]),
        "loop_nested_endless.onnx": model([helper.make_node("Loop", ["", "cond", "x"], ["y"], name="forever_outer",
                                                            body=outer_body)], [vi("x", [2])], [vi("y", [2])],
                                          [cond]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "models"))
    ap.add_argument("--hang-cases", metavar="DIR")
    a = ap.parse_args()
    build()
    os.makedirs(a.out, exist_ok=True)
    names = set()
    build_round_two()
    for name, data, _, _, _ in CASES:
        assert name not in names, name
        names.add(name)
        with open(os.path.join(a.out, name), "wb") as f:
            f.write(data)
    # the external-data cases point into this 64-byte file
    with open(os.path.join(a.out, "corpus_weights.bin"), "wb") as f:
        f.write(struct.pack("<16f", *range(16)))
    expect = {name: {"exit": codes, "words": words, **({"args": args} if args else {})}
              for name, _, codes, words, args in CASES}
    with open(os.path.join(a.out, "expect.json"), "w") as f:
        json.dump(expect, f, indent=1, sort_keys=True)
        f.write("\n")
    # a valid model for the API tests of tests/reliability: y = Relu(x), z = x + x, x float32 [n, 3]
    valid_dir = os.path.join(os.path.dirname(a.out), "valid")
    os.makedirs(valid_dir, exist_ok=True)
    api = model([helper.make_node("Relu", ["x"], ["y"], name="relu0"),
                 helper.make_node("Add", ["x", "x"], ["z"], name="add0")],
                [vi("x", ["n", 3])], [vi("y", ["n", 3]), vi("z", ["n", 3])])
    with open(os.path.join(valid_dir, "relu_add_dynamic.onnx"), "wb") as f:
        f.write(api.SerializeToString())
    for name, (m, x) in valid_round_two().items():  # with their input and expected output
        with open(os.path.join(valid_dir, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
        np.save(os.path.join(valid_dir, name + "_x.npy"), x)
        np.save(os.path.join(valid_dir, name + "_y.npy"), reference_output(name, m, x))
    if a.hang_cases:  # the same cases as they are, for running without the lowered cap
        os.makedirs(a.hang_cases, exist_ok=True)
        for name, m in hang_cases().items():
            with open(os.path.join(a.hang_cases, name), "wb") as f:
                f.write(m.SerializeToString())
    print(f"{len(CASES)} models written to {a.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Extreme values through every elementwise, reduction, softmax and index op of a backend, against the ONNX
reference implementation (onnx.reference) and onnxruntime.

usage: sweep_extremes.py --netrun PATH [--backend cpu|opencl|cuda] [--only OP,...] [--group NAME,...]
                         [--keep DIR] [--verbose]

Values: +-0, +-1, halves, the smallest subnormal, the smallest normal, FLT_MAX, +-inf, NaN, the edges of
exp's range, large logits; for integers 0, +-1, the type's MIN and MAX and their neighbours. Unary ops take them
as a vector, binary ops as an all-pairs grid, reductions and the softmax family as rows that each hold a few of
them among ordinary numbers (reduced along both axes, so that contiguous and strided kernels both run). Index
ops take int64 extremes: Slice starts/ends/steps, Range bounds, Gather indices at +-n.

Each group of one dtype is one model with a node per op, run once by `netrun --backend B` (nodes the backend
does not support fall back to the CPU and do not count for it). Each node is also run alone by onnx.reference
and onnxruntime. A netrun output must match both where they agree; where they disagree (onnx.reference's
LogSoftmax is log(Softmax(x)), which underflows to -inf where onnxruntime gives x - max - log(sum)), it must
match one of them, and the line says which. Floats: NaN where the reference has NaN, the same infinities, and
values within the dtype's tolerance; integers: bit for bit. Integer Div and Mod follow netrun's documented
rules (docs/reliability.md: truncation, MIN / -1 = MIN, a zero divisor is an error), checked with Python
integers, since the reference divides in float64.

Prints one line per group and op with a failure (or every line with --verbose), then
'N checked, N failed (backend B: N nodes ran there, N fell back)'. Exit 1 on a failure, 77 when the backend
is not available (ctest's skip code).
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

try:
    import onnxruntime as ort
except ImportError:  # the reference alone is still an oracle
    ort = None

OPSET = 21
F32 = np.float32

FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.5, 1e-45, -1e-45, 1.17549435e-38, 1e-7, 0.999999,
                  20.0, -20.0, 88.7, -88.7, 89.5, -104.0, 1e10, -1e10, 1e30, -1e30, 3.4028235e38, -3.4028235e38,
                  np.inf, -np.inf, np.nan, 65504.0, 3.14159265, 1.5707964, 100.0, -100.0]
HALF_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.5, 6e-8, -6e-8, 6.1035e-5, 1e-3, 11.0, -11.0, 20.0,
                 65504.0, -65504.0, np.inf, -np.inf, np.nan, 3.14159, 100.0, -100.0]


def int_specials(dt):
    info = np.iinfo(dt)
    vals = {0, 1, 2, 7, info.max, info.max - 1, info.min, info.min + 1, info.max // 2, 100}
    if info.min < 0:
        vals |= {-1, -2, -7, -100}
    return np.array(sorted(v for v in vals if info.min <= v <= info.max), dtype=dt)


def float_values(dt):
    base = HALF_SPECIALS if dt == np.float16 else FLOAT_SPECIALS
    if dt == np.float64:
        base = base + [1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 1e300, 709.0, 710.0, -745.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array(base, dtype=dt)


def reduction_rows(dt):
    """[R, 37] rows: ordinary numbers with specials planted at the first, a middle and the last lane (37 is no
    multiple of the vector widths, so that main loops and tails both meet them)."""
    rng = np.random.default_rng(11)
    big = 60000.0 if dt == np.float16 else 3.4028235e38 if dt == np.float32 else 1.7976931348623157e308
    plants = [(), ((0, np.nan),), ((17, np.nan),), ((36, np.nan),), ((0, np.inf),), ((18, -np.inf),),
              ((3, np.inf), (30, -np.inf)), ((5, np.inf), (9, np.nan)), ((36, big), (35, big)),
              ((0, -big), (1, -big)), ((10, 1e4 if dt == np.float16 else 1e30),),
              ((20, -1e4 if dt == np.float16 else -1e30),), ((2, 0.0), (3, -0.0))]
    rows = []
    for p in plants:
        r = rng.uniform(-3, 3, 37)
        for i, v in p:
            r[i] = v
        rows.append(r)
    rows.append(np.full(37, -np.inf))
    rows.append(np.full(37, np.inf))
    rows.append(np.full(37, 1e-45 if dt != np.float16 else 6e-8))
    rows.append(np.linspace(1e4, 1e4 + 36, 37) if dt != np.float16 else np.linspace(1e3, 1036, 37))  # large logits
    rows.append(np.full(37, 88.5 if dt != np.float16 else 11.0))  # exp(x) near the top of the range
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array(rows, dtype=dt)


# ---- ops ----
# (name, op, attrs, extra constant inputs {position: array}) per group
UNARY_FLOAT = ["Abs", "Neg", "Reciprocal", "Sqrt", "Exp", "Log", "Ceil", "Floor", "Round", "Sign", "Relu",
               "Sigmoid", "Tanh", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
               "Acosh", "Atanh", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "Elu", "Selu", "Celu",
               "LeakyRelu", "ThresholdedRelu", "Mish", "Gelu", "IsNaN", "IsInf", "Identity"]
UNARY_INT = ["Abs", "Neg", "Sign", "Relu", "Identity", "BitwiseNot"]
BINARY_FLOAT = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Equal", "Less", "Greater",
                "LessOrEqual", "GreaterOrEqual", "PRelu", "Sum", "Mean"]
BINARY_INT = ["Add", "Sub", "Mul", "Max", "Min", "Equal", "Less", "Greater", "Div", "Mod", "ModF",
              "BitwiseAnd", "BitwiseOr", "BitwiseXor"]
REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin"]
SOFTMAX = ["Softmax", "LogSoftmax", "Hardmax", "CumSum"]


def node_spec(op, dt, axis=None):
    """(op_type, attrs, extra initializer inputs) for one sweep node."""
    attrs, extra = {}, []
    if op == "Mod":
        attrs["fmod"] = 1 if np.issubdtype(dt, np.floating) else 0
    if op == "ModF":
        op, attrs["fmod"] = "Mod", 1
    if op.startswith("Reduce"):
        extra = [np.array([axis], np.int64)]
    if op in ("ArgMax", "ArgMin", "Softmax", "LogSoftmax", "Hardmax"):
        attrs["axis"] = axis
    if op == "CumSum":
        extra = [np.array(axis, np.int64)]
    return op, attrs, extra


def int_div_rule(a, b, fmod):
    """netrun's integer Div and Mod, exactly (Python integers): truncating division, MIN / -1 wraps to MIN;
    Mod takes the divisor's sign (fmod=0) or the dividend's (fmod=1)."""
    if fmod is None:
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    r = abs(a) % abs(b)
    r = -r if a < 0 else r
    if fmod == 0 and r != 0 and (r < 0) != (b < 0):
        r += b
    return r


def wrap(v, dt):
    bits = np.iinfo(dt).bits
    v &= (1 << bits) - 1
    if np.iinfo(dt).min < 0 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


# ---- models ----
def vi(name, arr):
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape))


def make_model(nodes, feeds, inits, outs):
    g = helper.make_graph(nodes, "sweep", [vi(k, v) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(o, 0, None) for o in outs],
                          initializer=[onnx.numpy_helper.from_array(a, n) for n, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="netrun-sweep")
    m.ir_version = 10
    try:  # output element types, which onnxruntime wants
        inf = onnx.shape_inference.infer_shapes(m)
        types = {v.name: v.type.tensor_type.elem_type for v in list(inf.graph.value_info) + list(inf.graph.output)}
        for o in m.graph.output:
            if types.get(o.name):
                o.type.tensor_type.elem_type = types[o.name]
    except Exception:
        pass
    return m


class Case:
    """One node: out name, op, node inputs (names), attrs, initializers, and how to check it."""
    serial = 0

    def __init__(self, group, label, op, inputs, attrs=None, inits=None, rule=None):
        self.group, self.label, self.op, self.inputs = group, label, op, inputs
        self.attrs, self.inits, self.rule = attrs or {}, inits or {}, rule
        Case.serial += 1
        self.out = re.sub(r"[^A-Za-z0-9_]", "_", f"{label}_{Case.serial}")


def build_groups(only):
    """[(group name, dtype name, feeds, [Case])]"""
    groups = []

    def want(op):
        return not only or op in only

    for dt in (np.float32, np.float16, np.float64):
        dn = np.dtype(dt).name
        x = float_values(dt)
        cases = [Case(f"unary_{dn}", op, op, ["X"]) for op in UNARY_FLOAT if want(op)]
        if want("Clip"):
            cases.append(Case(f"unary_{dn}", "Clip", "Clip", ["X", "cmin", "cmax"],
                              inits={"cmin": np.array(-1.5, dt), "cmax": np.array(100, dt)}))
        if want("Cast"):
            for to in ("int32", "int64", "uint8", "float16", "float32", "float64", "bool"):
                cases.append(Case(f"unary_{dn}", f"Cast_to_{to}", "Cast", ["X"],
                                  {"to": helper.np_dtype_to_tensor_dtype(np.dtype(to))}))
        groups.append((f"unary_{dn}", dn, {"X": x}, cases))
        a, b = x.reshape(-1, 1), x.reshape(1, -1)
        cases = [Case(f"binary_{dn}", op, node_spec(op, dt)[0], ["G" if op == "PRelu" else "A", "B"],
                      node_spec(op, dt)[1]) for op in BINARY_FLOAT if want(op)]
        if want("Where"):
            cases.append(Case(f"binary_{dn}", "Where", "Where", ["cond", "A", "B"],
                              inits={"cond": (np.arange(b.size) % 2 == 0).reshape(1, -1)}))
        grid = np.ascontiguousarray(np.broadcast_to(a, (a.size, b.size)))  # PRelu: the slope broadcasts one way
        groups.append((f"binary_{dn}", dn, {"A": a, "B": b, "G": grid}, cases))
        rows = reduction_rows(dt)
        for axis, data in ((1, rows), (0, np.ascontiguousarray(rows.T))):
            cases = []
            for op in REDUCE + SOFTMAX:
                if not want(op):
                    continue
                t, attrs, extra = node_spec(op, dt, axis)
                names, inits = ["R"], {}
                for k, e in enumerate(extra):
                    names.append(f"{op}_c{k}")
                    inits[f"{op}_c{k}"] = e
                for keep in ((0, 1) if op.startswith("Reduce") or op.startswith("Arg") else (None,)):
                    at = dict(attrs)
                    if keep is not None:
                        at["keepdims"] = keep
                    cases.append(Case(f"reduce_{dn}_axis{axis}", f"{op}_k{keep}" if keep is not None else op, t,
                                      names, at, inits))
            groups.append((f"reduce_{dn}_axis{axis}", dn, {"R": data}, cases))
    for dt in (np.int32, np.int64, np.int8, np.uint8):
        dn = np.dtype(dt).name
        x = int_specials(dt)
        cases = [Case(f"unary_{dn}", op, op, ["X"]) for op in UNARY_INT if want(op)]
        groups.append((f"unary_{dn}", dn, {"X": x}, cases))
        a, b = x.reshape(-1, 1), x.reshape(1, -1)
        nz = b[b != 0].reshape(1, -1)  # division by zero is an error: tested apart
        cases = []
        for op in BINARY_INT:
            if not want(op.rstrip("F")):
                continue
            t, attrs, _ = node_spec(op, dt)
            if op in ("Div", "Mod", "ModF"):
                rule = ("div", None) if op == "Div" else ("mod", attrs["fmod"])
                cases.append(Case(f"binary_{dn}", op, t, ["A", "BNZ"], attrs, rule=rule))
            else:
                cases.append(Case(f"binary_{dn}", op, t, ["A", "B"], attrs))
        groups.append((f"binary_{dn}", dn, {"A": a, "B": b, "BNZ": nz}, cases))
    for dn in ("int32", "int64"):
        dt = np.dtype(dn).type
        rows = np.array([int_specials(dt)[:10]] * 3, dtype=dt)
        rows[1] = rows[1][::-1]
        cases = []
        for op in ("ReduceMax", "ReduceMin", "ArgMax", "ArgMin"):
            if want(op):
                t, attrs, extra = node_spec(op, dt, 1)
                inits = {f"{op}_c0": extra[0]} if extra else {}
                cases.append(Case(f"reduce_{dn}", op, t, ["R"] + list(inits), dict(attrs, keepdims=1), inits))
        groups.append((f"reduce_{dn}", dn, {"R": rows}, cases))
    if want("Slice") or want("Range") or want("Gather"):
        groups.append(index_group(want))
    return [g for g in groups if g[3]]


def index_group(want):
    """Slice with int64 extreme starts/ends/steps, Range near the int64 limits, Gather at +-n."""
    I64 = np.iinfo(np.int64)
    data = np.arange(20, dtype=np.float32).reshape(4, 5)
    cases, inits = [], {}
    bounds = [I64.min, I64.min + 1, -6, -5, -1, 0, 1, 4, 5, 6, I64.max - 1, I64.max]
    steps = [1, -1, 2, -2, I64.max, -I64.max, I64.min]
    k = 0
    if want("Slice"):
        for st in steps:
            for s in bounds:
                for e in sorted(set(bounds[::3] + [I64.max, I64.min])):
                    names = [f"sl{k}_{w}" for w in ("s", "e", "a", "t")]
                    for n, v in zip(names, (s, e, 1, st)):
                        inits[n] = np.array([v], np.int64)
                    cases.append(Case("index_int64", f"Slice_{s}_{e}_{st}", "Slice", ["D"] + names,
                                      rule=("slice", s, e, st)))
                    k += 1
    feeds = {"D": data}
    if want("Range"):  # bounds as graph inputs, so that the backend's kernel runs (constants fold at prepare)
        for s, l, d in [(I64.max - 1, I64.max, 1), (I64.min, I64.min + 3, 1), (I64.max, I64.min, -(1 << 62)),
                        (I64.min, I64.max, 1 << 62), (I64.max, I64.max - 5, -2), (0, I64.max, I64.max),
                        (I64.min, 0, I64.max), (5, 5, 1), (5, 0, 1), (-3, 3, 2)]:
            names = [f"rg{k}_{w}" for w in ("s", "l", "d")]
            for n, v in zip(names, (s, l, d)):
                feeds[n] = np.array(v, np.int64)
            cases.append(Case("index_int64", f"Range_{s}_{l}_{d}", "Range", names, rule=("range", s, l, d)))
            k += 1
    if want("Gather"):
        for idx in ([-5, -1, 0, 4], [4, -5], [-1]):
            n = f"ga{k}"
            inits[n] = np.array(idx, np.int64)
            cases.append(Case("index_int64", f"Gather_{'_'.join(map(str, idx))}", "Gather", ["D", n], {"axis": 1}))
            k += 1
    for c in cases:
        c.inits = {n: inits[n] for n in c.inputs if n in inits}
    return ("index_int64", "int64", feeds, cases)


# ---- oracles ----
def single_model(case, feeds):
    used = {n: feeds[n] for n in case.inputs if n in feeds}
    node = helper.make_node(case.op, case.inputs, [case.out], **case.attrs)
    return make_model([node], used, case.inits, [case.out]), used


def oracles(case, feeds, tmp):
    """(onnx.reference's output, onnxruntime's), None where one cannot run the node. onnxruntime is not asked
    for integer Div/Mod: its kernels divide MIN by -1 with the CPU's instruction, which kills the process."""
    m, used = single_model(case, feeds)
    ref = rt = None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            ref = ReferenceEvaluator(m).run(None, used)[0]
        except Exception:
            ref = None
    if ort is not None and not (case.rule and case.rule[0] in ("div", "mod")):
        p = os.path.join(tmp, case.out + ".onnx")
        onnx.save(m, p)
        try:
            so = ort.SessionOptions()
            so.log_severity_level = 4
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            rt = ort.InferenceSession(p, so, providers=["CPUExecutionProvider"]).run(None, used)[0]
        except Exception:
            rt = None
    return ref, rt


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# Ops whose onnx.reference formula loses what float64 keeps: the same definition computed stably in float64
# (and rounded to the dtype) is a third oracle. A netrun output may match it instead of the other two.
def _log_softmax(x, axis):
    m = np.max(x, axis=axis, keepdims=True)  # NaN propagates, as in the reference
    return (x - m) - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


EXACT = {
    "Softplus": lambda at, x: np.logaddexp(0.0, x),
    "Erf": lambda at, x: _erf(x),
    "Gelu": lambda at, x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "PRelu": lambda at, x, s: np.where(x < 0, x * s, x),
    "LogSoftmax": lambda at, x: _log_softmax(x, at.get("axis", -1)),
}


def exact_oracle(case, feeds):
    f = EXACT.get(case.op)
    if f is None:
        return None
    args = [feeds[n] for n in case.inputs if n in feeds]
    with np.errstate(all="ignore"):
        y = f(case.attrs, *[np.asarray(v, np.float64) for v in args])
        return np.asarray(y).astype(args[0].dtype)


def tolerance(dtype, backend):
    if dtype == np.float16:
        return 2e-3, 1e-4
    if dtype == np.float64:  # onnx.reference computes some float64 ops (Erf, Gelu...) at float32 precision
        return 1e-7, 1e-15
    return (2e-5 if backend == "cpu" else 1e-4), 1e-6


def compare(got, want, backend):
    """None when got matches want, else a short reason."""
    if want is None:
        return "no reference"
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if got.dtype.kind not in "fc":
        bad = got != want
        if bad.any():
            i = np.unravel_index(np.argmax(bad), bad.shape)
            return f"{int(bad.sum())} of {bad.size} differ; first at {tuple(map(int, i))}: got {got[i]}, want {want[i]}"
        return None
    rtol, atol = tolerance(got.dtype, backend)
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(all="ignore"):
        ok = (np.isnan(g) & np.isnan(w)) | (g == w) | (np.isfinite(g) & np.isfinite(w) &
                                                       (np.abs(g - w) <= atol + rtol * np.abs(w)))
    if not ok.all():
        i = np.unravel_index(np.argmax(~ok), ok.shape)
        return f"{int((~ok).sum())} of {ok.size} differ; first at {tuple(map(int, i))}: got {g[i]!r}, want {w[i]!r}"
    return None


def slice_rule(data, s, e, step):
    """ONNX Slice on axis 1, in exact integers: negative indices count from the end, then starts clamp to
    [0, dim] (step > 0) or [0, dim - 1] (step < 0), ends to [0, dim] or [-1, dim - 1]."""
    dim = data.shape[1]
    s, e = s + dim if s < 0 else s, e + dim if e < 0 else e
    if step > 0:
        s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        idx = list(range(s, e, step))
    else:
        s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
        idx = list(range(s, e, step))
    return data[:, idx]


def rule_output(case, feeds):
    """Integer Div/Mod by netrun's rules, element by element; Slice and Range as the ONNX spec words them, in
    exact integers (onnx.reference slices with numpy's rules and counts Range in float64, which differ at the
    int64 limits)."""
    if case.rule[0] == "slice":
        return slice_rule(feeds["D"], *case.rule[1:])
    if case.rule[0] == "range":
        s, l, d = case.rule[1:]
        n = max(-((s - l) // d) if d > 0 else -((l - s) // -d), 0)  # ceil((l - s) / d)
        return np.array([s + i * d for i in range(n)], dtype=np.int64)
    a, b = np.broadcast_arrays(feeds["A"], feeds["BNZ"])
    dt = a.dtype.type
    kind, fmod = case.rule
    out = np.empty(a.shape, dtype=dt)
    for i in np.ndindex(a.shape):
        v = int_div_rule(int(a[i]), int(b[i]), None if kind == "div" else fmod)
        out[i] = wrap(v, dt)
    return out


# ---- netrun ----
def backend_available(netrun, backend):
    r = subprocess.run([netrun, "--backends"], capture_output=True, text=True, timeout=120)
    for line in r.stdout.splitlines():
        m = re.match(r"^" + re.escape(backend) + r"\s+(yes|no)\s*(.*)$", line)
        if m:
            return m.group(1) == "yes", m.group(2).strip()
    return False, "not found"


def supported(netrun, backend):
    """{(op, dtype name)} the backend or the CPU fallback lists in the support matrix."""
    r = subprocess.run([netrun, "--support-matrix", "--format", "csv"], capture_output=True, text=True, timeout=120)
    ok = {}
    for line in r.stdout.splitlines()[1:]:
        m = re.match(r'^([^,]*),([^,]+),\d,([^,]+),(\d),(\d),"?([^"]*)"?,', line)
        if not m or m.group(1) or m.group(5) != "1" or m.group(4) != "1":
            continue
        for d in m.group(6).split(","):
            ok.setdefault((m.group(2), d.strip().replace("bool", "bool")), set()).add(m.group(3))
    return ok


DTYPE_NAMES = {"float32": "float32", "float16": "float16", "float64": "float64", "int32": "int32",
               "int64": "int64", "int8": "int8", "uint8": "uint8", "bool": "bool"}


def run_group(a, name, dn, feeds, cases, support, tmp):
    """[(case, problem or None, backend that ran it)]"""
    keep = [c for c in cases if a.backend in support.get((c.op, dn), set()) or "cpu" in support.get((c.op, dn), set())]
    skipped = [c for c in cases if c not in keep]
    results = [(c, "skip: netrun does not support it for " + dn, "-") for c in skipped]
    if not keep:
        return results
    inits = {}
    for c in keep:
        inits.update(c.inits)
    nodes = [helper.make_node(c.op, c.inputs, [c.out], name=c.out, **c.attrs) for c in keep]
    used = {n: v for n, v in feeds.items() if any(n in c.inputs for c in keep)}
    m = make_model(nodes, used, inits, [c.out for c in keep])
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    mp = os.path.join(d, "model.onnx")
    onnx.save(m, mp)
    cmd = [a.netrun, mp, "--backend", a.backend, "--warmup", "0", "--iterations", "1", "-q", "--output-dir",
           os.path.join(d, "out"), "--json", os.path.join(d, "report.json"), "--no-optimize"]
    for n, v in used.items():
        np.save(os.path.join(d, n + ".npy"), v)
        cmd += ["--input", f"{n}={os.path.join(d, n + '.npy')}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return results + [(c, f"netrun exit {r.returncode}: {r.stderr.strip()[-400:]}", "?") for c in keep]
    placed = {}
    try:
        with open(os.path.join(d, "report.json")) as f:
            for nd in json.load(f).get("nodes", []):
                placed[nd.get("name")] = nd.get("backend")
    except (OSError, ValueError):
        pass
    for c in keep:
        p = os.path.join(d, "out", c.out + ".npy")
        if not os.path.exists(p):
            results.append((c, "output not written", "?"))
            continue
        got = np.load(p)
        ref, rt = oracles(c, feeds, d)
        if c.rule:
            want = rule_output(c, feeds)
            problem = compare(got, want, a.backend)
            if c.rule[0] in ("div", "mod"):
                with np.errstate(all="ignore"):  # the reference too, where it divides exactly (|values| < 2^53)
                    exact = (np.abs(np.broadcast_arrays(feeds["A"], feeds["BNZ"])[0].astype(np.float64)) < 2.0**53)
                if problem is None and ref is not None and exact.all() and compare(got, ref, a.backend) is not None:
                    problem = "matches netrun's rule but not onnx.reference: " + compare(got, ref, a.backend)
            elif problem is None:
                agree = [n for n, o in (("onnx.reference", ref), ("onnxruntime", rt))
                         if o is not None and compare(got, o, a.backend) is None]
                if len(agree) < 2:
                    c.note = "the spec's exact result; " + (f"as {agree[0]}" if agree else "neither oracle has it")
        elif ref is None and rt is None:
            problem = "skip: no oracle ran it"
        elif (ex := exact_oracle(c, feeds)) is not None and compare(got, ex, a.backend) is None:
            problem = None
            if (ref is not None and compare(got, ref, a.backend)) or (rt is not None and compare(got, rt, a.backend)):
                c.note = "matches the stable float64 definition, not the other oracles"
        else:
            pr = compare(got, ref, a.backend) if ref is not None else "n/a"
            po = compare(got, rt, a.backend) if rt is not None else "n/a"
            if ref is not None and rt is not None and compare(rt, ref, a.backend) is not None:
                # the oracles disagree: one of them must be matched, and we say which
                problem = None if pr is None or po is None else f"matches neither (reference: {pr}; onnxruntime: {po})"
                if problem is None:
                    c.note = "oracles disagree; matches " + ("onnx.reference" if pr is None else "onnxruntime")
            else:
                problem = pr if ref is not None else po
        results.append((c, problem, placed.get(c.out, "?")))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netrun", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--only", default="", help="comma-separated op types")
    ap.add_argument("--group", default="", help="comma-separated group name prefixes (unary, binary, reduce...)")
    ap.add_argument("--keep", help="keep models and outputs here")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    ok, why = backend_available(a.netrun, a.backend)
    if not ok:
        print(f"{a.backend} unavailable ({why}): skipped")
        return 77
    only = set(filter(None, a.only.split(",")))
    prefixes = tuple(filter(None, a.group.split(",")))
    support = supported(a.netrun, a.backend)
    tmp = a.keep or tempfile.mkdtemp(prefix="netrun-sweep-")
    checked = failed = on_backend = fell_back = disagree = skipped = 0
    try:
        for name, dn, feeds, cases in build_groups(only):
            if prefixes and not name.startswith(prefixes):
                continue
            for c, problem, where in run_group(a, name, dn, feeds, cases, support, tmp):
                if problem and problem.startswith("skip"):
                    skipped += 1
                    if a.verbose:
                        print(f"skip {name}.{c.label}: {problem[6:]}")
                    continue
                checked += 1
                on_backend += where == a.backend
                fell_back += where not in (a.backend, "?")
                note = getattr(c, "note", "")
                disagree += bool(note)
                if problem:
                    failed += 1
                    print(f"FAIL {name}.{c.label} [{where}]: {problem}")
                elif a.verbose or note:
                    print(f"ok   {name}.{c.label} [{where}]{' (' + note + ')' if note else ''}")
                sys.stdout.flush()
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{checked} checked, {failed} failed, {skipped} not supported (backend {a.backend}: {on_backend} nodes ran "
          f"there, {fell_back} fell back; the two oracles disagreed on {disagree})")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""End-to-end tests of the netrun command-line tool.

usage: test_cli.py --netrun PATH [--only NAME[,NAME...]] [--keep DIR] [--list]
Each scenario builds tiny ONNX models with onnx.helper, runs the CLI and checks exit codes, files and reports.
Prints one line per scenario and a last line 'N passed, N failed'; exit 1 when any failed.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NETRUN = None
WORK = None
TEST_PLUGINS = None  # the folder of the loader tests' plugins (tests/plugins), for unavailable_backend
FAKEDEV = None  # the folder of the fake device plugin (tests/plugins/fake_device.c), for crash_report


# ---------------------------------------------------------------- helpers

class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(args, timeout=120, env=None):
    r = subprocess.run([NETRUN] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env)
    return r


def expect_rc(r, rc, what):
    if r.returncode != rc:
        raise Fail(f"{what}: exit {r.returncode}, want {rc}\n--- stdout\n{r.stdout[-1500:]}\n"
                   f"--- stderr\n{r.stderr[-1500:]}")


def save_model(model, name):
    path = os.path.join(WORK, name)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def make_model(nodes, inputs, outputs, inits=(), name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="netrun-cli-tests")
    m.ir_version = 8
    return m


W = (np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0 - 0.5).astype(np.float32)


def mlp_model():
    """y = relu(x + b) @ W, with x [batch, 4]; the output's name has a '/' to test file-name sanitising."""
    b = np.array([0.5, -0.25, 0.0, 1.0], dtype=np.float32)
    nodes = [helper.make_node("Add", ["x", "b"], ["s"], name="add0"),
             helper.make_node("Relu", ["s"], ["r"], name="relu0"),
             helper.make_node("MatMul", ["r", "W"], ["out/y"], name="matmul0")]
    m = make_model(nodes,
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                   [helper.make_tensor_value_info("out/y", TensorProto.FLOAT, ["batch", 3])],
                   [numpy_helper.from_array(b, "b"), numpy_helper.from_array(W, "W")])
    return save_model(m, "mlp.onnx"), b


def mlp_ref(x, b):
    return np.maximum(x + b, 0).astype(np.float32) @ W


def two_input_model():
    """z = x + y (float, [batch, 3]) and k = i (int64 identity, [2, 5])."""
    nodes = [helper.make_node("Add", ["x", "y"], ["z"], name="add"),
             helper.make_node("Identity", ["i"], ["k"], name="ident")]
    m = make_model(nodes,
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
                    helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
                    helper.make_tensor_value_info("i", TensorProto.INT64, [2, 5])],
                   [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 3]),
                    helper.make_tensor_value_info("k", TensorProto.INT64, [2, 5])])
    return save_model(m, "two.onnx")


def npy(path, arr):
    np.save(path, arr)
    return path


def tmpdir(name):
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    return d


# ---------------------------------------------------------------- scenarios

def t_help_version():
    r = run(["--help"])
    expect_rc(r, 0, "--help")
    for word in ["usage", "--backend", "--precision", "--input", "--shape", "--check", "--json", "Exit codes",
                 "Examples", "--profile", "--profile-json", "--dot", "--support-matrix", "--explain", "--compare",
                 "--image", "--size", "--mean", "--scale", "--swap-rb", "--crop", "--layout", "--duration", "--batch",
                 "--max-tensor-bytes", "--max-graph-depth", "Image inputs", "Profiling and debugging:", "NO_COLOR"]:
        check(word in r.stdout, f"--help lacks {word!r}")
    r = run(["-h"])
    expect_rc(r, 0, "-h")
    r = run(["--version"])
    expect_rc(r, 0, "--version")
    hdr = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include", "netrun.h")).read()
    ver = ".".join(re.search(r"#define NETRUN_VERSION_%s (\d+)" % k, hdr).group(1) for k in ("MAJOR", "MINOR", "PATCH"))
    check(r.stdout.strip() == f"netrun {ver} (library {ver})", f"--version printed {r.stdout!r}, expected {ver} twice")


def t_bad_option():
    model, _ = mlp_model()
    cases = [[model, "--bogus"], [model, "--iterations", "abc"], [model, "--iterations", "-1"],
             [model, "--precision", "fp8"], [model, "--workspace-limit", "12Q"],
             [model, "--workspace-policy", "greedy"], [model, "--input", "noequals"], [model, "--warmup"],
             [model, model], [model, "--strict=1"]]
    for args in cases:
        r = run(args)
        expect_rc(r, 2, f"netrun {' '.join(map(str, args[1:]))}")
        check("netrun: error:" in r.stderr, f"{args[1:]}: no 'netrun: error:' in stderr: {r.stderr!r}")
    r = run([model, "--bogus"])
    check("--bogus" in r.stderr, "unknown option not named in the message")
    # A CPU setting with a bad value fails the CPU backend's start with a message naming the setting.
    for kv in ["cpu.spin_watch=2", "cpu.winograd=yes", "cpu.spin_us=-5", "cpu.wino_min_tiles=x"]:
        r = run([model, "--backend", "cpu", "--set", kv, "-q"])
        check(r.returncode != 0 and "netrun: error:" in r.stderr and kv.split("=")[0] in r.stderr,
              f"--set {kv}: exit {r.returncode}, stderr {r.stderr!r}")
    r = run([])
    expect_rc(r, 2, "no model")
    # Valid forms: --opt=value, size suffixes.
    r = run([model, "--iterations=2", "--warmup=0", "--workspace-limit", "256M", "-q"])
    expect_rc(r, 0, "--iterations=2 --workspace-limit 256M")


def t_missing_model():
    path = os.path.join(WORK, "does_not_exist.onnx")
    r = run([path])
    expect_rc(r, 2, "missing model")
    check("netrun: error:" in r.stderr and "does_not_exist.onnx" in r.stderr,
          f"message does not name the file: {r.stderr!r}")


def t_malformed_model():
    path = os.path.join(WORK, "garbage.onnx")
    with open(path, "wb") as f:
        f.write(b"\x0a\xff\xff\xff\xff\x0fthis is not an onnx model" * 3)
    r = run([path])
    expect_rc(r, 2, "malformed model")
    check("netrun: error:" in r.stderr and len(r.stderr.strip()) > len("netrun: error:") + 5,
          f"no useful message: {r.stderr!r}")
    empty = os.path.join(WORK, "empty.onnx")
    open(empty, "wb").close()
    r = run([empty])
    expect_rc(r, 2, "empty model file")


def t_output_dir():
    model, b = mlp_model()
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    xin = npy(os.path.join(WORK, "x24.npy"), x)
    out = os.path.join(WORK, "out_dir", "nested")
    r = run([model, "--backend", "cpu", "--input", f"x={xin}", "--output-dir", out, "--warmup", "0",
             "--iterations", "2"])
    expect_rc(r, 0, "run with --output-dir")
    f = os.path.join(out, "out_y.npy")
    check(os.path.exists(f), f"{f} not written (files: {os.listdir(out) if os.path.isdir(out) else 'none'})")
    got = np.load(f)
    want = mlp_ref(x, b)
    check(got.shape == want.shape and got.dtype == np.float32, f"got {got.shape} {got.dtype}, want {want.shape}")
    check(np.allclose(got, want, rtol=1e-5, atol=1e-6), f"values differ: {got} vs {want}")
    # The text report names the output, its shape and times.
    for word in ["out/y", "[2, 3]", "median", "peak RSS", "cpu"]:
        check(word in r.stdout, f"text report lacks {word!r}:\n{r.stdout}")


def t_outputs_on_device():
    """--outputs-on-device: the timed runs leave the outputs in device memory (no device -> host bytes in their
    stats), one more run reads them for the report; the values are those of a host run. Without a device backend
    it fails with a message naming the output and why each kind of device memory was refused (CUDA's reason is not
    hidden behind OpenCL's)."""
    model, b = mlp_model()
    r = run([model, "--backend", "cpu", "--outputs-on-device", "--iterations", "1"])
    check(r.returncode != 0 and "--outputs-on-device" in r.stderr and "out/y" in r.stderr and
          "CUDA: " in r.stderr and "OpenCL: " in r.stderr, f"cpu only: exit {r.returncode}, stderr {r.stderr!r}")
    if not FAKEDEV:
        print("  (no --fakedev plugin: the device part not exercised)")
        return
    env = dict(os.environ, NETRUN_BACKEND_PATH=FAKEDEV + ":" + os.environ.get("NETRUN_BACKEND_PATH", ""))
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    xin = npy(os.path.join(WORK, "x24_dev.npy"), x)
    reports = {}
    for flag in ([], ["--outputs-on-device"]):
        out = tmpdir("out_dev" if flag else "out_host")
        r = run([model, "--backend", "fakedev,cpu", "--input", f"x={xin}", *flag, "--output-dir", out, "--warmup", "1",
                 "--iterations", "3", "--json", "-"], env=env)
        expect_rc(r, 0, f"fakedev {flag}")
        if r.returncode:
            return
        reports[bool(flag)] = json.loads(r.stdout)
        got = np.load(os.path.join(out, "out_y.npy"))
        check(np.allclose(got, mlp_ref(x, b), rtol=1e-5, atol=1e-6), f"{flag}: values differ: {got}")
    host_d2h, dev_d2h = (reports[k]["transfers"]["d2h_bytes_per_run"] for k in (False, True))
    check(host_d2h >= 2 * 3 * 4, f"host outputs: {host_d2h} device -> host bytes a run, want the output's 24 at least")
    check(dev_d2h == 0, f"outputs on the device: {dev_d2h} device -> host bytes a run, want 0")


def t_input_pb():
    model, b = mlp_model()
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    p = os.path.join(WORK, "x34.pb")
    with open(p, "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    out = tmpdir("out_pb")
    r = run([model, "--backend", "cpu", "--input", f"x={p}", "--output-dir", out, "-q", "--iterations", "1"])
    expect_rc(r, 0, "TensorProto input")
    check(r.stdout.strip() == "", f"--quiet printed {r.stdout!r}")
    got = np.load(os.path.join(out, "out_y.npy"))
    check(np.allclose(got, mlp_ref(x, b), rtol=1e-5, atol=1e-6), "values differ with .pb input")


def t_check():
    model, b = mlp_model()
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    xin = npy(os.path.join(WORK, "x_check.npy"), x)
    want = mlp_ref(x, b)
    good = tmpdir("ref_good")
    npy(os.path.join(good, "out_y.npy"), want)
    r = run([model, "--input", f"x={xin}", "--check", good, "--iterations", "1"])
    expect_rc(r, 0, "--check with correct reference")
    check("max abs err" in r.stdout, f"no per-output error line:\n{r.stdout}")

    pbdir = tmpdir("ref_pb")
    with open(os.path.join(pbdir, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(want, "out/y").SerializeToString())
    r = run([model, "--input", f"x={xin}", "--check", pbdir, "--iterations", "1"])
    expect_rc(r, 0, "--check with output_0.pb reference")

    bad = tmpdir("ref_bad")
    wrong = want.copy()
    wrong[1, 2] += 0.5
    npy(os.path.join(bad, "out_y.npy"), wrong)
    r = run([model, "--input", f"x={xin}", "--check", bad, "--iterations", "1"])
    expect_rc(r, 3, "--check with a wrong reference")
    check("out/y" in r.stderr, f"mismatch message does not name the output: {r.stderr!r}")
    # Within a loose tolerance the same reference passes.
    r = run([model, "--input", f"x={xin}", "--check", bad, "--atol", "1", "--iterations", "1", "-q"])
    expect_rc(r, 0, "--check with --atol 1")

    shape_bad = tmpdir("ref_shape")
    npy(os.path.join(shape_bad, "out_y.npy"), want[:1])
    r = run([model, "--input", f"x={xin}", "--check", shape_bad, "--iterations", "1"])
    expect_rc(r, 3, "--check with a wrong-shape reference")

    missing = tmpdir("ref_missing")
    r = run([model, "--input", f"x={xin}", "--check", missing, "--iterations", "1"])
    expect_rc(r, 2, "--check with a missing reference")
    check("out_y.npy" in r.stderr or "output_0.pb" in r.stderr, f"message does not say what is missing: {r.stderr!r}")


def t_json():
    model, b = mlp_model()
    r = run([model, "--backend", "cpu", "--json", "-", "--warmup", "1", "--iterations", "5", "--shape", "x=2x4"])
    expect_rc(r, 0, "--json -")
    try:
        rep = json.loads(r.stdout)
    except ValueError as e:
        raise Fail(f"--json - is not valid JSON ({e}):\n{r.stdout[:2000]}")
    for k in ["model", "nodes", "timings", "memory", "outputs", "backends", "placement"]:
        check(k in rep, f"JSON lacks {k!r}: keys {sorted(rep)}")
    check(rep["model"]["path"] == model, f"model.path {rep['model']['path']!r}")
    ins = rep["model"]["inputs"]
    check(len(ins) == 1 and ins[0]["name"] == "x" and ins[0]["dtype"] == "float32", f"model.inputs {ins}")
    check(ins[0]["shape"] == ["batch", 4], f"declared shape {ins[0]['shape']}")
    outs = rep["model"]["outputs"]
    check(len(outs) == 1 and outs[0]["name"] == "out/y", f"model.outputs {outs}")
    nodes = rep["nodes"]
    check(isinstance(nodes, list) and len(nodes) >= 1, f"nodes {nodes}")
    for n in nodes:
        for k in ["name", "op", "backend", "reason"]:
            check(k in n, f"node lacks {k}: {n}")
    ops = sorted(n["op"] for n in nodes)
    check("MatMul" in ops, f"MatMul not among nodes: {ops}")
    check(sum(rep["placement"].values()) == len(nodes), f"placement {rep['placement']} vs {len(nodes)} nodes")
    check(rep["backends"] == ["cpu"], f"backends {rep['backends']}")
    t = rep["timings"]
    for k in ["load_ms", "init_ms", "prepare_ms", "first_run_ms", "latency_ms", "throughput_per_s"]:
        check(k in t, f"timings lacks {k}: {t}")
    lat = t["latency_ms"]
    for k in ["min", "median", "p90", "p99", "mean"]:
        check(isinstance(lat.get(k), (int, float)) and lat[k] >= 0, f"latency_ms.{k} = {lat.get(k)}")
    check(lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"], f"latency order {lat}")
    check(t["throughput_per_s"] > 0, f"throughput {t['throughput_per_s']}")
    mem = rep["memory"]
    for k in ["arena_bytes", "weight_bytes", "workspace_bytes", "outputs_in_place", "views", "peak_rss_bytes"]:
        check(k in mem, f"memory lacks {k}")
    check(mem["peak_rss_bytes"] > 1024 * 1024, f"peak RSS {mem['peak_rss_bytes']}")
    o = rep["outputs"]
    check(len(o) == 1 and o[0]["name"] == "out/y" and o[0]["shape"] == [2, 3] and o[0]["dtype"] == "float32",
          f"outputs {o}")
    check(len(o[0]["values"]) == 6 and all(isinstance(v, (int, float)) for v in o[0]["values"]),
          f"output values {o[0]['values']}")

    # --json FILE keeps the text report on stdout.
    jf = os.path.join(WORK, "report.json")
    r = run([model, "--json", jf, "--iterations", "1"])
    expect_rc(r, 0, "--json FILE")
    with open(jf) as f:
        rep2 = json.load(f)
    check("timings" in rep2 and "Times" in r.stdout, "--json FILE: report missing or text report suppressed")


def t_json_escaping():
    """Names with quotes, backslashes and control characters must still give valid JSON."""
    weird = 'we"ird\\name\tx'
    nodes = [helper.make_node("Relu", [weird], ["o\"ut"], name="n\"1\n")]
    m = make_model(nodes, [helper.make_tensor_value_info(weird, TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("o\"ut", TensorProto.FLOAT, [2])])
    path = save_model(m, "weird.onnx")
    r = run([path, "--json", "-", "--iterations", "1"])
    expect_rc(r, 0, "weird names")
    rep = json.loads(r.stdout)
    check(rep["model"]["inputs"][0]["name"] == weird, f"name round trip: {rep['model']['inputs'][0]['name']!r}")
    check(rep["outputs"][0]["name"] == "o\"ut", "output name round trip")


def t_shape():
    model, b = mlp_model()
    out = tmpdir("out_shape")
    r = run([model, "--backend", "cpu", "--shape", "x=5x4", "--output-dir", out, "--iterations", "1"])
    expect_rc(r, 0, "--shape x=5x4")
    got = np.load(os.path.join(out, "out_y.npy"))
    check(got.shape == (5, 3), f"output shape {got.shape}, want (5, 3)")
    check("batch=5" in r.stdout, f"text report does not show batch=5:\n{r.stdout}")
    # Random floats lie in [-1, 1): x + b in [-1.25, 2), so relu(x+b) @ W is bounded.
    check(np.all(np.isfinite(got)), "non-finite output from random input")

    # --dim sets the symbol by name.
    out2 = tmpdir("out_dim")
    r = run([model, "--dim", "batch=7", "--output-dir", out2, "--iterations", "1", "-q"])
    expect_rc(r, 0, "--dim batch=7")
    check(np.load(os.path.join(out2, "out_y.npy")).shape == (7, 3), "--dim batch=7 did not give 7 rows")

    # Unset symbolic dims default to 1 with a note.
    out3 = tmpdir("out_default")
    r = run([model, "--output-dir", out3, "--iterations", "1"])
    expect_rc(r, 0, "default symbolic dim")
    check(np.load(os.path.join(out3, "out_y.npy")).shape == (1, 3), "default batch is not 1")
    check("note" in r.stderr and "batch" in r.stderr, f"no note about the default dim: {r.stderr!r}")

    # Fixed dims cannot be changed; wrong rank and unknown input names are usage errors.
    for bad in ["x=5x5", "x=5", "nosuch=1x4", "x=2xq"]:
        r = run([model, "--shape", bad])
        expect_rc(r, 2, f"--shape {bad}")
    # A file input whose shape conflicts with --shape.
    xin = npy(os.path.join(WORK, "x_conf.npy"), np.zeros((2, 4), np.float32))
    r = run([model, "--shape", "x=3x4", "--input", f"x={xin}"])
    expect_rc(r, 2, "--shape disagreeing with --input")
    # Wrong dtype in an input file.
    xi = npy(os.path.join(WORK, "x_int.npy"), np.zeros((2, 4), np.int32))
    r = run([model, "--input", f"x={xi}"])
    expect_rc(r, 2, "--input of the wrong dtype")
    r = run([model, "--input", f"nosuch={xi}"])
    expect_rc(r, 2, "--input with an unknown name")
    r = run([model, "--input", f"x={os.path.join(WORK, 'nofile.npy')}"])
    expect_rc(r, 2, "--input with a missing file")


def t_random_inputs():
    model = two_input_model()
    out1, out2, out3 = tmpdir("rand1"), tmpdir("rand2"), tmpdir("rand3")
    base = [model, "--shape", "x=64x3", "--iterations", "1", "--warmup", "0", "-q"]
    expect_rc(run(base + ["--output-dir", out1]), 0, "random run 1")
    expect_rc(run(base + ["--output-dir", out2]), 0, "random run 2")
    expect_rc(run(base + ["--output-dir", out3, "--seed", "7"]), 0, "random run seed 7")
    z1, z2, z3 = (np.load(os.path.join(d, "z.npy")) for d in (out1, out2, out3))
    check(z1.shape == (64, 3), f"z shape {z1.shape}")
    check(np.array_equal(z1, z2), "same seed gave different random inputs")
    check(not np.array_equal(z1, z3), "different seeds gave the same random inputs")
    check(np.all(z1 >= -2) and np.all(z1 < 2) and z1.std() > 0.1, "x + y outside [-2, 2) or constant")
    k = np.load(os.path.join(out1, "k.npy"))
    check(k.dtype == np.int64 and k.shape == (2, 5), f"k {k.dtype} {k.shape}")
    check(np.all((k >= 0) & (k < 10)), f"random int64 outside [0, 10): {k}")
    # y from a file: z - y must be the random x, which is within [-1, 1).
    y = np.full((64, 3), 100.0, np.float32)
    yin = npy(os.path.join(WORK, "y64.npy"), y)
    out4 = tmpdir("rand4")
    expect_rc(run(base + ["--input", f"y={yin}", "--output-dir", out4]), 0, "random x with file y")
    x = np.load(os.path.join(out4, "z.npy")) - 100.0
    check(np.all(x >= -1.0001) and np.all(x < 1.0001) and x.std() > 0.1, "random floats not in [-1, 1)")


def t_backends():
    r = run(["--backends"])
    expect_rc(r, 0, "--backends")
    lines = [ln for ln in r.stdout.splitlines() if ln.split() and ln.split()[0] == "cpu"]
    check(lines and lines[0].split()[1] == "yes", f"cpu not listed as available:\n{r.stdout}")


def t_strict_unknown():
    model, _ = mlp_model()
    r = run([model, "--backend", "nosuchbackend", "--strict"])
    check(r.returncode in (1, 2), f"--strict with an unknown backend: exit {r.returncode}")
    check("netrun: error:" in r.stderr and "nosuchbackend" in r.stderr,
          f"message does not name the backend: {r.stderr!r}")
    # Without --strict an unknown name is still a usage error: a typo must not change where the model runs.
    r = run([model, "--backend", "nosuchbackend,cpu", "--iterations", "1"])
    expect_rc(r, 2, "unknown backend without --strict")
    check("nosuchbackend" in r.stderr and "cpu" in r.stderr, f"message does not list the backends: {r.stderr!r}")
    r = run([model, "--backend", "cpu,", "--iterations", "1"])
    expect_rc(r, 2, "empty name in the backend list")
    r = run([model, "--backend", "cpu", "--strict", "--iterations", "1", "-q"])
    expect_rc(r, 0, "--strict on cpu")


def t_verbose_placement():
    model, _ = mlp_model()
    r = run([model, "--backend", "cpu", "-v", "--iterations", "1"])
    expect_rc(r, 0, "-v")
    for word in ["NODE", "REASON", "add0", "relu0", "matmul0", "Relu"]:
        check(word in r.stdout, f"-v lacks {word!r}:\n{r.stdout}")


def t_fallback_listed():
    """Every node not on the first backend is listed with its reason (text and JSON); needs the template
    backend (runs only Relu and Add), which the build tree always has."""
    r = run(["--backends"])
    if not any(ln.split()[:2] == ["template", "yes"] for ln in r.stdout.splitlines()):
        print("  (template backend not available: fallback listing not exercised)")
        return
    model, _ = mlp_model()
    r = run([model, "--backend", "template,cpu", "--iterations", "1"])
    expect_rc(r, 0, "--backend template,cpu")
    check("not on template" in r.stdout, f"no fallback section:\n{r.stdout}")
    # the default report has one line per kind of fallback, with its count and reason
    check(re.search(r"^\s+1 x MatMul -> cpu: fallback: template: .{4,}", r.stdout, re.M),
          f"MatMul fallback not summarised with its reason:\n{r.stdout}")
    r = run([model, "--backend", "template,cpu", "--iterations", "1", "-v"])
    check("matmul0 (MatMul) -> cpu:" in r.stdout, f"-v: MatMul fallback not listed with its reason:\n{r.stdout}")
    line = [ln for ln in r.stdout.splitlines() if "matmul0 (MatMul)" in ln][0]
    check(len(line.split("-> cpu:", 1)[1].strip()) > 3, f"empty reason: {line!r}")
    r = run([model, "--backend", "template,cpu", "--iterations", "0", "--json", "-"])
    expect_rc(r, 0, "--json with --iterations 0")
    rep = json.loads(r.stdout)
    mm = [n for n in rep["nodes"] if n["op"] == "MatMul"]
    check(mm and mm[0]["backend"] == "cpu" and mm[0]["reason"], f"MatMul node {mm}")
    check(rep["primary_backend"] == "template" and rep["backends"] == ["template", "cpu"],
          f"backends {rep['backends']} primary {rep['primary_backend']}")
    check(rep["timings"]["latency_ms"] is None and rep["timings"]["throughput_per_s"] is None,
          f"--iterations 0 should give null latency: {rep['timings']}")
    check(rep["outputs"][0]["shape"] == [1, 3], "outputs still reported with --iterations 0")
    # --strict on a backend that cannot run every node fails at prepare and names the node.
    r = run([model, "--backend", "template", "--strict", "-q"])
    check(r.returncode == 1 and "netrun: error:" in r.stderr, f"--strict template: exit {r.returncode} {r.stderr!r}")
    # --check on something that is not a folder is a usage error before any run.
    r = run([model, "--check", os.path.join(WORK, "nofolder")])
    expect_rc(r, 2, "--check on a missing folder")


def t_option_keys():
    """Every --set key is checked against what the runtime and the session's backends read; settings that cannot
    change the run say so; short flags bundle; --device 1 does not fail because of a backend that runs nothing."""
    model, _ = mlp_model()
    r = run([model, "--backend", "cpu", "--set", "cpu.winogard=0", "-q"])
    expect_rc(r, 2, "--set cpu.winogard=0 (a typo)")
    check("cpu.winogard" in r.stderr and "did you mean 'cpu.winograd'" in r.stderr, f"no suggestion: {r.stderr!r}")
    r = run([model, "--set", "foo.bar=1", "-q"])
    expect_rc(r, 2, "--set foo.bar=1")
    check("unknown option 'foo.bar'" in r.stderr, f"foo.bar not named: {r.stderr!r}")
    r = run([model, "--set", "memory.inplce=0", "-q"])
    expect_rc(r, 2, "--set memory.inplce=0")
    check("did you mean 'memory.inplace'" in r.stderr, f"no suggestion for a runtime key: {r.stderr!r}")
    r = run([model, "--set", "noequals", "-q"])
    expect_rc(r, 2, "--set without =")
    r = run([model, "--backend", "cpu", "--set", "memory.inplace=0", "--set", "cpu.spin_us=0", "--iterations", "1"])
    expect_rc(r, 0, "valid keys")
    check("no effect" not in r.stderr, f"valid keys reported as having no effect: {r.stderr!r}")
    # settings the CPU does not use: said once each, the run goes on
    r = run([model, "--backend", "cpu", "--precision", "fp16", "--workspace-limit", "1M", "--iterations", "1"])
    expect_rc(r, 0, "--precision fp16 --workspace-limit on the cpu")
    check("precision fp16 has no effect" in r.stderr and "workspace policy and limit has no effect" in r.stderr,
          f"no note for settings without effect: {r.stderr!r}")
    r = run([model, "--backend", "cpu", "--precision", "fp16", "--iterations", "1", "-q"])
    check(r.returncode == 0 and r.stderr == "", f"-q still printed: {r.stderr!r}")
    r = run([model, "--backend", "cpu", "--set", "template.x=1", "--iterations", "1"])
    expect_rc(r, 0, "a key of a backend the session does not use")
    check("'template.x' has no effect: backend 'template' is not used" in r.stderr, f"no note: {r.stderr!r}")
    r = run([model, "--backend", "template,cpu", "--set", "template.x=1", "-q"])
    expect_rc(r, 2, "a key the template backend does not read")
    check("backend 'template' reads no settings" in r.stderr, f"{r.stderr!r}")
    # the default list holds one-device plugins (template): --device 1 runs, the CPU not caring
    r = run([model, "--device", "1", "--iterations", "1"])
    expect_rc(r, 0, "--device 1 with the default backend list")
    check("device index has no effect" in r.stderr, f"no note for --device 1 on the cpu: {r.stderr!r}")
    # getopt-style bundling
    r = run([model, "-qv", "--iterations", "1"])
    check(r.returncode == 0 and r.stdout == "", f"-qv: exit {r.returncode}, stdout {r.stdout[:200]!r}")
    r = run([model, "-vq", "--iterations", "1"])
    expect_rc(r, 0, "-vq")
    r = run([model, "-qz"])
    expect_rc(r, 2, "-qz")
    check("'-z'" in r.stderr, f"unknown bundled flag not named: {r.stderr!r}")
    # --no-cuda-graph without a CUDA plugin is a note, not a refused key
    r = run(["--backends"])
    if not any(ln.split()[:1] == ["cuda"] for ln in r.stdout.splitlines()):
        r = run([model, "--no-cuda-graph", "--iterations", "1"])
        expect_rc(r, 0, "--no-cuda-graph without cuda")
        check("--no-cuda-graph has no effect" in r.stderr, f"{r.stderr!r}")
    # a NETRUN_BACKEND_PATH entry that does not exist is said, not ignored
    env = dict(os.environ)
    env["NETRUN_BACKEND_PATH"] = env.get("NETRUN_BACKEND_PATH", "") + ":" + os.path.join(WORK, "no_such_folder")
    r = run([model, "--backend", "cpu", "--iterations", "1"], env=env)
    expect_rc(r, 0, "a missing NETRUN_BACKEND_PATH entry")
    check("no_such_folder" in r.stderr and "does not exist" in r.stderr, f"missing path entry not said: {r.stderr!r}")


def t_metadata():
    """What the file says about itself reaches the report: producer, opsets, doc string, metadata_props."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu0")]
    g = helper.make_graph(nodes, "meta_graph", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], doc_string="graph doc")
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
                          producer_name="meta-exporter", producer_version="4.5.6", doc_string="the model's doc",
                          domain="org.example", model_version=7)
    m.ir_version = 8
    helper.set_model_props(m, {"author": "netrun tests", "license": "none"})
    model = save_model(m, "meta.onnx")
    r = run([model, "--iterations", "1", "--backend", "cpu"])
    expect_rc(r, 0, "metadata model")
    check("made by meta-exporter 4.5.6; opsets ai.onnx 17, ai.onnx.ml 3" in r.stdout, f"no metadata line:\n{r.stdout[:600]}")
    r = run([model, "--iterations", "1", "--backend", "cpu", "--json", "-"])
    rep = json.loads(r.stdout)["model"]
    want = {"producer_name": "meta-exporter", "producer_version": "4.5.6", "domain": "org.example", "model_version": 7,
            "ir_version": 8, "doc_string": "the model's doc", "graph_name": "meta_graph", "graph_doc_string": "graph doc",
            "opsets": {"": 17, "ai.onnx.ml": 3}, "metadata_props": {"author": "netrun tests", "license": "none"}}
    for k, v in want.items():
        check(rep.get(k) == v, f"JSON model.{k} = {rep.get(k)!r}, want {v!r}")


def onnx_light_model(name):
    """A model-zoo network shipped inside the pinned onnx wheel (onnx/backend/test/data/light), or None."""
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", name)
    return path if os.path.exists(path) else None


def t_report_summary():
    """The default report of a model-zoo network is short: constants folded at prepare are one count, other
    placements one line per kind; -v keeps the detail; reports use public op names; Shape's reason is true."""
    path = onnx_light_model("light_densenet121.onnx")
    if not path:
        print("  (light_densenet121.onnx not in this onnx wheel: summary not exercised)")
    else:
        r = run([path, "--backend", "cpu", "--iterations", "1", "--warmup", "0"], timeout=300)
        expect_rc(r, 0, "densenet121")
        lines = r.stdout.splitlines()
        check(len(lines) < 40, f"default report has {len(lines)} lines:\n{r.stdout}")
        check(re.search(r"^\s+\d{3,} folded to constants at prepare", r.stdout, re.M), f"no folded count:\n{r.stdout}")
        check("-> const:" not in r.stdout, f"folded nodes listed one by one:\n{r.stdout}")
        r = run([path, "--backend", "cpu", "--iterations", "1", "--warmup", "0", "-v"], timeout=300)
        expect_rc(r, 0, "densenet121 -v")
        check(len(r.stdout.splitlines()) > 1000 and "-> const: folded at prepare" in r.stdout, "-v lost the detail")
        check("NCHWc" not in r.stdout, f"an internal op name leaked:\n{[ln for ln in r.stdout.splitlines() if 'NCHWc' in ln][:5]}")
        r = run([path, "--backend", "cpu", "--iterations", "1", "--warmup", "0", "--profile"], timeout=300)
        expect_rc(r, 0, "densenet121 --profile")
        check("NCHWc" not in r.stdout.split("Profile", 1)[1].split("BY OP")[0].replace("nChw16c", ""),
              "an internal op name in the profile")
        check("..." not in "".join(ln.split()[3] for ln in r.stdout.split("Profile", 1)[1].splitlines()[2:6] if len(ln.split()) > 3),
              "kernel names cut in the profile")
    # Shape of a computed value: folded because its shape is known, not because its input is constant
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
             helper.make_node("Shape", ["r"], ["s"], name="shape0"),
             helper.make_node("Cast", ["s"], ["sf"], name="cast0", to=TensorProto.FLOAT),
             helper.make_node("Add", ["r", "sf"], ["y"], name="add0")]
    m = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    model = save_model(m, "shape_reason.onnx")
    r = run([model, "--backend", "cpu", "--iterations", "1", "-v"])
    expect_rc(r, 0, "Shape model")
    line = [ln for ln in r.stdout.splitlines() if "shape0 (Shape) -> const" in ln]
    check(line and "its input's shape is known" in line[0], f"Shape's reason: {line}")
    line = [ln for ln in r.stdout.splitlines() if "cast0 (Cast) -> const" in ln]
    check(line and "all inputs are constant" in line[0], f"Cast's reason: {line}")


def t_unavailable_backend():
    """A backend named on the command line that cannot be used here (the test plugin 'nodevice', whose probe finds
    no device, as cuda on a machine without a GPU) is an error with the reason and the way out, never a silent
    run on the CPU; naming another backend or --allow-fallback runs there, with a warning."""
    if not TEST_PLUGINS:
        print("  (no --test-plugins folder: not exercised)")
        return
    env = dict(os.environ, NETRUN_BACKEND_PATH=TEST_PLUGINS + ":" + os.environ.get("NETRUN_BACKEND_PATH", ""))
    model, _ = mlp_model()
    r = run([model, "--backend", "nodevice", "--iterations", "1", "-q"], env=env)
    expect_rc(r, 2, "--backend nodevice")
    for word in ["nodevice", "unavailable", "no device found", "--allow-fallback", "nodevice,cpu"]:
        check(word in r.stderr, f"message lacks {word!r}: {r.stderr!r}")
    r = run([model, "--backend", "nodevice", "--strict", "--iterations", "1", "-q"], env=env)
    expect_rc(r, 2, "--backend nodevice --strict")
    for args in (["--backend", "nodevice,cpu"], ["--backend", "nodevice", "--allow-fallback"]):
        r = run([model, *args, "--iterations", "1", "--json", "-"], env=env)
        expect_rc(r, 0, " ".join(args))
        check("nodevice" in r.stderr and "unavailable" in r.stderr, f"{args}: no warning: {r.stderr!r}")
        rep = json.loads(r.stdout)
        check(all(n["backend"] == "cpu" for n in rep["nodes"]), f"{args}: nodes not on cpu: {rep['nodes']}")


def t_crash_report():
    """A backend that crashes (the test plugin 'fakedev' with fakedev.crash, raising SIGSEGV) ends the CLI with that
    signal, after one line naming the node and backend it was preparing or running."""
    if not FAKEDEV:
        print("  (no --fakedev plugin: not exercised)")
        return
    ldd = subprocess.run(["ldd", NETRUN], capture_output=True, text=True)
    if "libasan" in ldd.stdout:
        print("  (AddressSanitizer build: its own report replaces netrun's)")
        return
    env = dict(os.environ, NETRUN_BACKEND_PATH=FAKEDEV + ":" + os.environ.get("NETRUN_BACKEND_PATH", ""))
    model, _ = mlp_model()
    for where, words in (("kernel_create", ["preparing node", "on backend 'fakedev'"]),
                         ("kernel_run", ["running node", "on backend 'fakedev'"])):
        r = run([model, "--backend", "fakedev,cpu", "--set", f"fakedev.crash={where}", "--iterations", "1", "-q"],
                env=env)
        check(r.returncode == -signal.SIGSEGV, f"crash in {where}: exit {r.returncode}, want SIGSEGV: {r.stderr!r}")
        check("fatal signal SIGSEGV while" in r.stderr, f"crash in {where}: no report: {r.stderr!r}")
        for w in words:
            check(w in r.stderr, f"crash in {where}: report lacks {w!r}: {r.stderr!r}")
        check(any(f"'{n}'" in r.stderr for n in ("matmul0", "add0", "relu0")), f"no node named: {r.stderr!r}")


# ---------------------------------------------------------------- performance and debugging flags

def backends_available():
    r = run(["--backends"])
    return [ln.split()[0] for ln in r.stdout.splitlines()[1:] if len(ln.split()) >= 2 and ln.split()[1] == "yes"
            and not ln.startswith(" ")]


def gpu_backend():
    """A GPU backend that is available here (cuda), else None."""
    av = backends_available()
    return "cuda" if "cuda" in av else None


def heavy_model():
    """relu(x @ W1) @ W2 with x [batch, 256]: enough work per node that runtime overhead between events is small."""
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    w2 = (rng.standard_normal((256, 256)) / 16).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "W2"], ["y"], name="mm2"),
             helper.make_node("ArgMax", ["y"], ["cls"], name="argmax", axis=1)]
    m = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 256]),
                    helper.make_tensor_value_info("cls", TensorProto.INT64, ["batch", 1])],
                   [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")])
    return save_model(m, "heavy.onnx")


def t_profile():
    model = heavy_model()
    r = run([model, "--backend", "cpu", "--batch", "64", "--profile", "--iterations", "10", "--warmup", "2"])
    expect_rc(r, 0, "--profile")
    out = r.stdout
    for word in ["Profile (10 profiled runs", "NODE", "OP", "BACKEND", "KERNEL", "WORKSPACE", "TIME (ms)", "SHARE",
                 "BY OP", "BY BACKEND", "sum of node and copy times per run", "measured wall time per profiled run"]:
        check(word in out, f"--profile output lacks {word!r}:\n{out}")
    table = out.split("Profile (", 1)[1].split("BY OP")[0]
    rows = [ln.split() for ln in table.splitlines()[2:] if ln.strip() and not ln.strip().startswith("(")]
    names = [row[0] for row in rows]
    check(sorted(names) == ["argmax", "mm1", "mm2", "relu"], f"profile rows {names}")
    times = [float(row[-2]) for row in rows]
    check(times == sorted(times, reverse=True), f"rows not sorted by time: {times}")
    shares = [float(row[-1].rstrip("%")) for row in rows]
    check(abs(sum(shares) - 100) < 1.0, f"shares sum to {sum(shares)}")
    # The JSON report carries the same profile; the event sum must be within 10% of the measured run time. A
    # machine busy with other work can preempt the process between events (which lowers the ratio for that try
    # only): three tries, one must be within.
    ratios = []
    for _ in range(3):
        r = run([model, "--backend", "cpu", "--batch", "64", "--profile", "--iterations", "10", "--json", "-"])
        expect_rc(r, 0, "--profile --json -")
        p = json.loads(r.stdout)["profile"]
        check(p["runs"] == 10, f"profile runs {p['runs']}")
        check(len([n for n in p["nodes"] if not n["is_copy"]]) == 4, f"profile nodes {p['nodes']}")
        ratios.append(p["event_ms_per_run"] / p["wall_ms_per_run"])
        if 0.9 <= ratios[-1] <= 1.1:
            break
    check(0.9 <= ratios[-1] <= 1.1, f"node times sum to {p['event_ms_per_run']} ms per run, measured "
                                    f"{p['wall_ms_per_run']} ms (ratios of three tries {ratios})")
    check({o["op"] for o in p["by_op"]} == {"MatMul", "Relu", "ArgMax"}, f"by_op {p['by_op']}")
    check([b["backend"] for b in p["by_backend"]] == ["cpu"], f"by_backend {p['by_backend']}")
    r = run([model, "--profile", "--iterations", "0"])
    expect_rc(r, 2, "--profile with no timed runs")


def check_trace(path, n_nodes, runs, expect_copies):
    with open(path) as f:
        tr = json.load(f)
    ev = tr["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    for e in xs:
        for k in ["name", "cat", "ts", "dur", "pid", "tid"]:
            check(k in e, f"X event lacks {k}: {e}")
        check(e["dur"] >= 0 and e["ts"] >= 0, f"negative time: {e}")
    nodes = [e for e in xs if e["cat"] not in ("run", "copy")]
    copies = [e for e in xs if e["cat"] == "copy"]
    run_ev = [e for e in xs if e["cat"] == "run"]
    check(len(nodes) == n_nodes * runs, f"{len(nodes)} node events, want {n_nodes} x {runs}")
    check(len(run_ev) == runs, f"{len(run_ev)} run events, want {runs}")
    for name in {e["name"] for e in nodes}:
        cnt = sum(1 for e in nodes if e["name"] == name)
        check(cnt == runs, f"node {name}: {cnt} events, want one per run ({runs})")
    if expect_copies:
        check(copies, "no copy events although a device backend ran part of the model")
        check(all("->" in e["args"]["direction"] for e in copies), f"copy directions {copies[:3]}")
    else:
        check(not copies, f"copy events between host backends: {copies[:3]}")
    # Runs laid end to end: each run's events lie after the previous run's.
    by_run = {}
    for e in nodes + copies:
        by_run.setdefault(e["args"]["run"], []).append(e)
    ends = []
    for k in sorted(by_run):
        start = min(e["ts"] for e in by_run[k])
        if ends:
            check(start >= ends[-1] - 1e-3, f"run {k} starts at {start} before the previous ended at {ends[-1]}")
        ends.append(max(e["ts"] + e["dur"] for e in by_run[k]))
    meta = [e for e in ev if e["ph"] == "M"]
    check(any(e["name"] == "process_name" for e in meta), "no process_name metadata")
    names = {e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    for e in nodes:
        check(e["cat"] in names, f"backend {e['cat']} has no named track: {names}")
    return tr


def t_profile_control_flow():
    """--profile shows the nodes inside an If's branch (named node/branch/name, one level deeper in the JSON), and
    the sums count them once (inside the If's own time)."""
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="relu_in_then"),
                                helper.make_node("Neg", ["t"], ["y_then"], name="neg_in_then")], "then_branch", [],
                               [helper.make_tensor_value_info("y_then", TensorProto.FLOAT, ["n"])])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["y_else"], name="abs_in_else")], "else_branch", [],
                               [helper.make_tensor_value_info("y_else", TensorProto.FLOAT, ["n"])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"], name="positive"),
             helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)]
    m = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
                   [numpy_helper.from_array(np.array(-1e9, np.float32), "zero")])
    model = save_model(m, "if_profile.onnx")
    r = run([model, "--backend", "cpu", "--profile", "--iterations", "3", "--json", "-"])
    expect_rc(r, 0, "--profile on an If")
    p = json.loads(r.stdout)["profile"]
    rows = {n["name"]: n for n in p["nodes"]}
    check("branch/then_branch/relu_in_then" in rows and "branch/then_branch/neg_in_then" in rows,
          f"the then-branch's nodes are not in the profile: {sorted(rows)}")
    check(rows["branch/then_branch/relu_in_then"]["depth"] == 1 and rows["branch"]["depth"] == 0,
          f"depths {[(n['name'], n['depth']) for n in p['nodes']]}")
    top = sum(n["mean_ms"] for n in p["nodes"] if n["depth"] == 0)
    check(abs(top - p["event_ms_per_run"]) <= 1e-6 + 1e-3 * top,
          f"event sum {p['event_ms_per_run']} is not the depth-0 rows' {top}")
    check(not any(o["op"] == "Neg" for o in p["by_op"]), f"a body's op in by_op: {p['by_op']}")


def t_profile_json():
    model, _ = mlp_model()
    tf = os.path.join(WORK, "trace.json")
    have_template = "template" in backends_available()
    backends = "template,cpu" if have_template else "cpu"
    r = run([model, "--backend", backends, "--shape", "x=4x4", "--profile-json", tf, "--iterations", "5", "-q"])
    expect_rc(r, 0, "--profile-json")
    tr = check_trace(tf, 3, 5, expect_copies=False)
    cats = {e["cat"] for e in tr["traceEvents"] if e["ph"] == "X"}
    if have_template:
        check({"template", "cpu"} <= cats, f"backends as categories: {cats}")
    gpu = gpu_backend()
    if gpu:
        hm = heavy_model()   # ArgMax falls back to cpu: copies at the border
        tf2 = os.path.join(WORK, "trace_gpu.json")
        r = run([hm, "--backend", f"{gpu},cpu", "--profile-json", tf2, "--iterations", "3", "-q"])
        expect_rc(r, 0, "--profile-json on a GPU")
        check_trace(tf2, 4, 3, expect_copies=True)
    else:
        print("  (no GPU backend: copy events checked absent only)")


def t_support_matrix():
    av = run(["--backends"])
    found = [ln.split()[0] for ln in av.stdout.splitlines()[1:] if ln and not ln.startswith(" ")]
    r = run(["--support-matrix"])
    expect_rc(r, 0, "--support-matrix")
    lines = r.stdout.splitlines()
    header = [ln for ln in lines if ln.startswith("OP ")]
    check(header, f"no header line:\n{r.stdout[:500]}")
    for b in found:
        check(b in header[0].split(), f"backend {b} missing from the header {header[0]!r}")
    body = lines[lines.index(header[0]) + 1:lines.index("Constraints stated by the backends:") - 1]
    check(len(body) >= 100, f"only {len(body)} ops in the matrix")
    relu = [ln for ln in body if ln.split()[0] == "Relu"]
    check(relu and "f32" in relu[0], f"Relu row {relu}")
    r = run(["--support-matrix", "--format", "csv"])
    expect_rc(r, 0, "--support-matrix --format csv")
    import csv, io
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    ops = {(x["domain"], x["op"]) for x in rows}
    check(len(ops) >= 100, f"csv: {len(ops)} ops")
    check(len(rows) == len(ops) * len(found), f"csv: {len(rows)} rows for {len(ops)} ops x {len(found)} backends")
    cpu_relu = [x for x in rows if x["op"] == "Relu" and x["backend"] == "cpu"]
    check(cpu_relu and cpu_relu[0]["supported"] == "1" and "float32" in cpu_relu[0]["dtypes"], f"cpu Relu {cpu_relu}")
    if "template" in found:
        t_mm = [x for x in rows if x["op"] == "MatMul" and x["backend"] == "template"]
        check(t_mm and t_mm[0]["supported"] == "0", f"template MatMul {t_mm}")
        t_add = [x for x in rows if x["op"] == "Add" and x["backend"] == "template"]
        check(t_add and t_add[0]["constraints"], f"template Add states no constraint: {t_add}")
    r = run(["--support-matrix", "--format", "md"])
    expect_rc(r, 0, "--support-matrix --format md")
    check("| Op |" in r.stdout and "|---|" in r.stdout, "md table header")
    check(sum(1 for ln in r.stdout.splitlines() if ln.startswith("| ")) >= 101, "md: fewer than 100 op rows")
    expect_rc(run(["--support-matrix", "--format", "xml"]), 2, "--format xml")
    model, _ = mlp_model()
    expect_rc(run([model, "--format", "md"]), 2, "--format without --support-matrix")


def t_explain():
    model, _ = mlp_model()
    r = run(["--explain", model, "--backend", "cpu"])
    expect_rc(r, 0, "--explain")
    for word in ["add0", "relu0", "matmul0", "reason:", "listed by:", "-> cpu"]:
        check(word in r.stdout, f"--explain lacks {word!r}:\n{r.stdout}")
    check("Times" not in r.stdout, "--explain should not run the model")
    if "template" in backends_available():
        r = run([model, "--explain", "--backend", "template,cpu"])
        expect_rc(r, 0, "--explain template,cpu")
        block = r.stdout.split("matmul0", 1)[1]
        check("fallback" in block.split("listed by:")[0], f"MatMul's fallback reason not shown:\n{r.stdout}")


def t_dot():
    model, _ = mlp_model()
    df = os.path.join(WORK, "g.dot")
    backends = "template,cpu" if "template" in backends_available() else "cpu"
    r = run([model, "--backend", backends, "--dot", df, "--iterations", "1", "-q"])
    expect_rc(r, 0, "--dot")
    text = open(df).read()
    check(text.startswith("digraph"), "not a digraph")
    for w in ["add0", "relu0", "matmul0", "fillcolor", "->", "cluster_legend"]:
        check(w in text, f"DOT lacks {w!r}")
    edges = [ln for ln in text.splitlines() if "->" in ln and "[" in ln and "label=\"/" not in ln]
    check(len(edges) >= 4, f"edges {edges}")  # x->add0->relu0->matmul0->out/y
    check("copy " not in text, "copy edges between host backends")
    colours = {ln.split('fillcolor="')[1].split('"')[0] for ln in text.splitlines() if ln.strip().startswith("n")
               and "fillcolor" in ln}
    if backends == "template,cpu":
        check(len(colours) == 2, f"nodes on two backends should have two colours: {colours}")
    import shutil
    if shutil.which("dot"):
        svg = os.path.join(WORK, "g.svg")
        p = subprocess.run(["dot", "-Tsvg", df, "-o", svg], capture_output=True, text=True)
        check(p.returncode == 0 and os.path.getsize(svg) > 500, f"graphviz rejected the DOT: {p.stderr}")
    gpu = gpu_backend()
    if gpu:
        df2 = os.path.join(WORK, "g_gpu.dot")
        r = run([heavy_model(), "--backend", f"{gpu},cpu", "--dot", df2, "--iterations", "1", "-q"])
        expect_rc(r, 0, "--dot on a GPU")
        check("style=dashed" in open(df2).read(), "no dashed copy edge on a GPU placement")


def write_ppm(path, img):
    h, w, _ = img.shape
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w, h) + img.astype(np.uint8).tobytes())


def t_image():
    nodes = [helper.make_node("Identity", ["data"], ["out"], name="id")]
    m = make_model(nodes, [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, 4, 4])],
                   [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 3, 4, 4])])
    model = save_model(m, "img_nchw.onnx")
    img = (np.arange(4 * 8 * 3) * 7 % 256).astype(np.uint8).reshape(4, 8, 3)  # h 4, w 8
    ppm = os.path.join(WORK, "img.ppm")
    write_ppm(ppm, img)
    out = tmpdir("img_out")
    r = run([model, "--image", f"data={ppm}", "--crop", "--mean", "10,20,30", "--scale", "0.5", "--swap-rb",
             "--batch", "2", "--output-dir", out, "--iterations", "1"])
    expect_rc(r, 0, "--image with crop/mean/scale/swap-rb")
    got = np.load(os.path.join(out, "out.npy"))
    # crop: the 8x4 image already covers 4x4 at scale 1, so the center 4 columns are kept without resampling.
    want = ((img[:, 2:6, ::-1].astype(np.float32) - np.array([10, 20, 30], np.float32)) * 0.5).transpose(2, 0, 1)
    check(got.shape == (2, 3, 4, 4), f"shape {got.shape}")
    check(np.array_equal(got[0], want) and np.array_equal(got[1], want), f"pixels differ:\n{got[0]}\nvs\n{want}")
    check(ppm in r.stdout, "the report does not name the image as the input's source")
    # NHWC, stretched resize to 2x2: shape and value range only (the filter is stb's).
    m2 = make_model([helper.make_node("Identity", ["data"], ["out"], name="id")],
                    [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, "H", "W", 3])],
                    [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, "H", "W", 3])])
    model2 = save_model(m2, "img_nhwc.onnx")
    out2 = tmpdir("img_out2")
    r = run([model2, "--image", f"data={ppm}", "--size", "2x2", "--layout", "nhwc", "--scale", "0.00392156862745098",
             "--output-dir", out2, "--iterations", "1", "-q"])
    expect_rc(r, 0, "--image nhwc --size 2x2")
    got = np.load(os.path.join(out2, "out.npy"))
    check(got.shape == (1, 2, 2, 3) and got.min() >= 0 and got.max() <= 1.0001, f"nhwc {got.shape} {got.min()} {got.max()}")
    # Errors: not an image, no size for symbolic H/W, bad option values.
    bad = os.path.join(WORK, "bad.jpg")
    open(bad, "wb").write(b"not an image at all")
    r = run([model, "--image", f"data={bad}"])
    expect_rc(r, 2, "--image with a file that is not an image")
    check("bad.jpg" in r.stderr, f"message does not name the file: {r.stderr!r}")
    expect_rc(run([model2, "--image", f"data={ppm}"]), 2, "--image with symbolic H/W and no --size")
    for args in [["--size", "12"], ["--mean", "1,2"], ["--layout", "chw"], ["--scale", "x"]]:
        expect_rc(run([model, "--image", f"data={ppm}"] + args), 2, f"--image {args}")


def bilinear(img, h, w):
    """cv2.resize INTER_LINEAR of an HWC image in float32 (the documented ImagePreprocess arithmetic)."""
    H, W = img.shape[:2]

    def taps(n, N):
        f = ((np.arange(n) + 0.5) * (N / n) - 0.5).astype(np.float32)
        s = np.floor(f).astype(np.int64)
        t = (f - s).astype(np.float32)
        t[s < 0], s[s < 0] = 0, 0
        hi = s >= N - 1
        s[hi], t[hi] = N - 1, 0
        return s, np.minimum(s + 1, N - 1), t
    y0, y1, wy = taps(h, H)
    x0, x1, wx = taps(w, W)
    f = img.astype(np.float32)
    wy, wx = wy[:, None, None], wx[None, :, None]
    r0 = f[y0][:, x0] * (1 - wx) + f[y0][:, x1] * wx
    r1 = f[y1][:, x0] * (1 - wx) + f[y1][:, x1] * wx
    return r0 * (1 - wy) + r1 * wy


def t_device_preprocess():
    """--device-preprocess: the same --image flags converted in the graph (ImagePreprocess on the CPU here)."""
    nodes = [helper.make_node("Identity", ["data"], ["out"], name="id")]
    m = make_model(nodes, [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, 4, 4])],
                   [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["N", 3, 4, 4])])
    model = save_model(m, "img_nchw.onnx")
    img = (np.arange(4 * 8 * 3) * 7 % 256).astype(np.uint8).reshape(4, 8, 3)  # h 4, w 8
    ppm = os.path.join(WORK, "img.ppm")
    write_ppm(ppm, img)
    flags = ["--crop", "--mean", "10,20,30", "--scale", "0.5", "--swap-rb", "--batch", "2", "--iterations", "1"]
    host, dev = tmpdir("host"), tmpdir("dev")
    expect_rc(run([model, "--image", f"data={ppm}", "--output-dir", host] + flags), 0, "--image (host)")
    r = run([model, "--image", f"data={ppm}", "--output-dir", dev, "--device-preprocess", "-v"] + flags)
    expect_rc(r, 0, "--image --device-preprocess")
    a, b = np.load(os.path.join(host, "out.npy")), np.load(os.path.join(dev, "out.npy"))
    check(a.shape == b.shape == (2, 3, 4, 4), f"shapes {a.shape} {b.shape}")
    # no resampling here (crop of a covering image at scale 1): both paths give the same numbers
    check(np.array_equal(a, b), f"--device-preprocess differs from the host path:\n{a[0]}\nvs\n{b[0]}")
    check("ImagePreprocess" in r.stdout, "the placement does not show the ImagePreprocess node")
    # a resize: the graph's bilinear (cv2.resize INTER_LINEAR) against a numpy one; the host path resizes with
    # stb_image_resize's filters, so it is only reported (docs/usage.md gives the numbers)
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:48, 0:64]
    big = np.clip(np.stack([xx * 4, yy * 5, (xx + yy) * 2], -1) + rng.integers(-20, 21, (48, 64, 3)), 0, 255)
    big = big.astype(np.uint8)
    ppm2 = os.path.join(WORK, "big.ppm")
    write_ppm(ppm2, big)
    m2 = make_model(nodes, [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 20, 24])],
                    [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 3, 20, 24])])
    model2 = save_model(m2, "img_20x24.onnx")
    host2, dev2 = tmpdir("host2"), tmpdir("dev2")
    common = ["--mean", "1,2,3", "--scale", "0.25", "--iterations", "1", "-q"]
    expect_rc(run([model2, "--image", f"data={ppm2}", "--output-dir", host2] + common), 0, "--image resize (host)")
    expect_rc(run([model2, "--image", f"data={ppm2}", "--output-dir", dev2, "--device-preprocess"] + common), 0,
              "--image resize --device-preprocess")
    want = ((bilinear(big, 20, 24) - np.array([1, 2, 3], np.float32)) * np.float32(0.25)).transpose(2, 0, 1)[None]
    got = np.load(os.path.join(dev2, "out.npy"))
    err = np.abs(got - want).max()
    check(err < 1e-4, f"--device-preprocess resize off the bilinear reference by {err}")
    stb = np.load(os.path.join(host2, "out.npy"))
    print(f"     stb_image_resize vs bilinear, 64x48 -> 24x20: max {np.abs(stb - got).max() / 0.25:.2f} levels, "
          f"mean {np.abs(stb - got).mean() / 0.25:.2f}")
    # --set preprocess.* with random frames: --shape gives the frame's shape, the report shows the uint8 input
    r = run([model2, "--set", "preprocess.input=data", "--shape", "data=1x30x50x3", "--iterations", "1"])
    expect_rc(r, 0, "--set preprocess.input with --shape of the frames")
    check(re.search(r"data\s+uint8\s+\[1, data_height=30, data_width=50, 3\]", r.stdout) is not None,
          f"the report does not show the frame input:\n{r.stdout[:600]}")
    # errors: no image, two images, NHWC
    expect_rc(run([model, "--device-preprocess"]), 2, "--device-preprocess without --image")
    r = run([model, "--image", f"data={ppm}", "--device-preprocess", "--layout", "nhwc"])
    expect_rc(r, 2, "--device-preprocess --layout nhwc")
    check("NCHW" in r.stderr, f"the message does not say why: {r.stderr!r}")
    r = run([model, "--image", f"data={ppm}", "--device-preprocess", "--mean", "1,2,3", "--set", "preprocess.std=1,0,1"])
    expect_rc(r, 2, "a bad preprocess.std")
    check("preprocess.std" in r.stderr, f"the message does not name the option: {r.stderr!r}")


def t_compare():
    model, _ = mlp_model()
    second = "template+cpu" if "template" in backends_available() else "cpu"
    r = run([model, "--compare", f"cpu,{second}", "--shape", "x=8x4"])
    expect_rc(r, 0, f"--compare cpu,{second}")
    for w in ["Compare", "A = [cpu]", "out/y", "max abs err", "Intermediate values: 3 compared over 3 nodes",
              "no node diverged beyond tolerance"]:
        check(w in r.stdout, f"--compare output lacks {w!r}:\n{r.stdout}")
    r = run([model, "--compare", f"{second},cpu", "--json", "-", "--rtol", "0", "--atol", "0", "-v"])
    expect_rc(r, 0, "--compare --json -")
    c = json.loads(r.stdout)["compare"]
    check(c["outputs_match"] is True and c["first_divergent_node"] is None, f"compare {c}")
    check(c["values_compared"] == 3 and c["nodes_diverged"] == 0, f"compare counts {c}")
    check(c["outputs"][0]["value"] == "out/y" and c["outputs"][0]["max_abs_err"] == 0, f"outputs {c['outputs']}")
    for bad in [["--compare", "cpu"], ["--compare", "cpu,"], ["--compare", "cpu,cpu", "--backend", "cpu"],
                ["--compare", "cpu,nosuch"]]:
        r = run([model] + bad)
        check(r.returncode == 2, f"{bad}: exit {r.returncode}, want 2 ({r.stderr!r})")
    gpu = gpu_backend()
    if gpu:  # a real second implementation: report the first node over an impossible tolerance, exit 3
        r = run([heavy_model(), "--compare", f"{gpu}+cpu,cpu", "--batch", "8", "--rtol", "0", "--atol", "0"])
        check(r.returncode in (0, 3), f"--compare on a GPU: exit {r.returncode} {r.stderr}")
        if r.returncode == 3:
            check("first divergent node: #" in r.stdout, f"no first divergent node:\n{r.stdout}")


def t_duration_batch():
    model, _ = mlp_model()
    r = run([model, "--duration", "0.3", "--warmup", "0", "--json", "-"])
    expect_rc(r, 0, "--duration 0.3")
    rep = json.loads(r.stdout)
    check(rep["timings"]["timed_runs"] > 1, f"timed runs {rep['timings']['timed_runs']}")
    check(rep["options"]["duration_s"] == 0.3, f"duration_s {rep['options']['duration_s']}")
    out = tmpdir("batch")
    r = run([model, "--batch", "3", "--output-dir", out, "--iterations", "1", "-q"])
    expect_rc(r, 0, "--batch 3")
    check(np.load(os.path.join(out, "out_y.npy")).shape == (3, 3), "--batch 3 did not give 3 rows")
    expect_rc(run([model, "--batch", "3", "--dim", "batch=4"]), 2, "--batch disagreeing with --dim")
    expect_rc(run([model, "--duration", "1", "--iterations", "5"]), 2, "--duration with --iterations")
    expect_rc(run([model, "--duration", "0"]), 2, "--duration 0")
    expect_rc(run([model, "--batch", "0"]), 2, "--batch 0")
    fixed = save_model(make_model([helper.make_node("Relu", ["x"], ["y"])],
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]), "fixed.onnx")
    expect_rc(run([fixed, "--batch", "5"]), 2, "--batch on a model without a symbolic batch")


def t_load_limits():
    model, _ = mlp_model()   # W is 4x3 float = 48 bytes
    r = run([model, "--max-tensor-bytes", "16", "--iterations", "1"])
    expect_rc(r, 2, "--max-tensor-bytes 16")
    check("netrun: error:" in r.stderr and "limit" in r.stderr, f"message: {r.stderr!r}")
    expect_rc(run([model, "--max-tensor-bytes", "1K", "--max-graph-depth", "4", "--iterations", "1", "-q"]), 0,
              "--max-tensor-bytes 1K")
    for bad in [["--max-tensor-bytes", "12Q"], ["--max-tensor-bytes", "0"], ["--max-graph-depth", "0"],
                ["--max-graph-depth", "x"]]:
        expect_rc(run([model] + bad), 2, f"{bad}")
    # Nesting: an If whose branch holds another If is 2 deep: a limit of 1 refuses it.
    inner = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "inner", [],
                              [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    mid = helper.make_graph([helper.make_node("If", ["c"], ["m"], then_branch=inner, else_branch=inner)], "mid", [],
                            [helper.make_tensor_value_info("m", TensorProto.FLOAT, [2])])
    top = make_model([helper.make_node("If", ["c"], ["y"], then_branch=mid, else_branch=mid)],
                     [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                      helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    nested = save_model(top, "nested.onnx")
    r = run([nested, "--max-graph-depth", "1", "--iterations", "1"])
    expect_rc(r, 2, "--max-graph-depth 1 on a 2-deep model")


def t_progress_quiet():
    """Progress shows on a terminal only; never with --quiet; colour never with NO_COLOR."""
    import pty
    model, _ = mlp_model()
    r = run([model, "--duration", "1.5", "--warmup", "0"])
    expect_rc(r, 0, "--duration 1.5 without a terminal")
    check("\r" not in r.stderr and "ETA" not in r.stderr and "\033[" not in r.stderr,
          f"progress or colour on a pipe: {r.stderr!r}")

    def on_tty(args, env=None):
        master, slave = pty.openpty()
        p = subprocess.Popen([NETRUN] + args, stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        chunks = []
        while True:
            try:
                b = os.read(master, 4096)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
        p.wait(timeout=60)
        os.close(master)
        return p.returncode, b"".join(chunks).decode(errors="replace")

    rc, err = on_tty([model, "--duration", "2", "--warmup", "0"])
    check(rc == 0 and "ETA" in err and "runs" in err, f"no progress on a terminal: rc {rc} {err!r}")
    rc, err = on_tty([model, "--duration", "2", "--warmup", "0", "-q"])
    check(rc == 0 and "ETA" not in err, f"progress despite --quiet: {err!r}")
    env = dict(os.environ, NO_COLOR="1")
    rc, err = on_tty([model, "--backend", "nosuch"], env)
    check(rc == 2 and "netrun: error:" in err and "\033[" not in err, f"colour despite NO_COLOR: {err!r}")
    env.pop("NO_COLOR")
    rc, err = on_tty([model, "--backend", "nosuch"], env)
    check(rc == 2 and "\033[" in err, f"no colour on a terminal: {err!r}")


SCENARIOS = {
    "help_version": t_help_version,
    "bad_option": t_bad_option,
    "missing_model": t_missing_model,
    "malformed_model": t_malformed_model,
    "output_dir": t_output_dir,
    "outputs_on_device": t_outputs_on_device,
    "input_pb": t_input_pb,
    "check": t_check,
    "json": t_json,
    "json_escaping": t_json_escaping,
    "shape": t_shape,
    "random_inputs": t_random_inputs,
    "backends": t_backends,
    "strict_unknown": t_strict_unknown,
    "verbose_placement": t_verbose_placement,
    "fallback_listed": t_fallback_listed,
    "unavailable_backend": t_unavailable_backend,
    "crash_report": t_crash_report,
    "profile": t_profile,
    "profile_json": t_profile_json,
    "profile_control_flow": t_profile_control_flow,
    "support_matrix": t_support_matrix,
    "explain": t_explain,
    "dot": t_dot,
    "image": t_image,
    "device_preprocess": t_device_preprocess,
    "compare": t_compare,
    "duration_batch": t_duration_batch,
    "load_limits": t_load_limits,
    "progress_quiet": t_progress_quiet,
    "option_keys": t_option_keys,
    "report_summary": t_report_summary,
    "metadata": t_metadata,
}


def main():
    global NETRUN, WORK, TEST_PLUGINS, FAKEDEV
    ap = argparse.ArgumentParser()
    ap.add_argument("--netrun", required=False)
    ap.add_argument("--only", default=None, help="comma-separated scenario names")
    ap.add_argument("--keep", default=None, help="work in this folder and keep it")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--test-plugins", default=None, help="folder of tests/plugins' builds (unavailable_backend)")
    ap.add_argument("--fakedev", default=None, help="folder of the fake device plugin (crash_report)")
    a = ap.parse_args()
    if a.list:
        print("\n".join(SCENARIOS))
        return
    if not a.netrun:
        ap.error("--netrun is required")
    NETRUN = os.path.abspath(a.netrun)
    TEST_PLUGINS = os.path.abspath(a.test_plugins) if a.test_plugins else None
    FAKEDEV = os.path.abspath(a.fakedev) if a.fakedev else None
    names = a.only.split(",") if a.only else list(SCENARIOS)
    for n in names:
        if n not in SCENARIOS:
            sys.exit(f"unknown scenario {n!r}; known: {', '.join(SCENARIOS)}")
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="netrun-cli-") as tmp:
        for n in names:
            WORK = os.path.join(a.keep or tmp, n)
            os.makedirs(WORK, exist_ok=True)
            try:
                SCENARIOS[n]()
                passed += 1
                print(f"ok   {n}")
            except Fail as e:
                failed += 1
                print(f"FAIL {n}: {e}")
            except Exception:  # a crash of the test itself is a failure too
                failed += 1
                print(f"FAIL {n}: {traceback.format_exc()}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()

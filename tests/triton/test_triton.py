#!/usr/bin/env python3
"""The netrun backend inside a real tritonserver (from the pinned nvidia-pytriton wheel), driven over HTTP with
tritonclient: outputs against onnxruntime, 8 concurrent clients x 200 requests through the dynamic batcher, bad
requests and bad models answered with errors while the server stays healthy, unload and reload, auto-complete,
and the benchmarks' lean client (tools/bench/kserve_client.py).

usage: test_triton.py --backend-dir BUILD/lib/triton/netrun [--kind cpu|gpu] [--only NAME,...] [--clients 8]
       [--requests 200] [--keep DIR]
Exit 0 when every check passed, 1 when one failed, 77 (skip) when the wheel or tritonclient is missing or
tritonserver cannot start on this machine. The server listens on 127.0.0.1 on a free port and is stopped by
this script, whatever happens.
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time
import traceback

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from triton_server import SKIP, CannotStart, Cudart, TritonServer, stop_on_sigterm  # noqa: E402

OPSET = 17


def save(model_dir, graph, config, version="1", raw=None):
    os.makedirs(os.path.join(model_dir, version), exist_ok=True)
    path = os.path.join(model_dir, version, "model.onnx")
    if raw is not None:
        with open(path, "wb") as f:
            f.write(raw)
    else:
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        onnx.save(m, path)
    with open(os.path.join(model_dir, "config.pbtxt"), "w") as f:
        f.write(config)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def build_repo(root, kind):
    """The model repository. KIND is the instance group kind of the models that run (KIND_CPU or KIND_GPU)."""
    rng = np.random.default_rng(7)
    group = f'instance_group [{{ count: 2, kind: {kind} }}]'
    # on a GPU the mlp must run whole on netrun's cuda backend (strict: the model fails to load otherwise)
    on_gpu = ('parameters { key: "backends" value: { string_value: "cuda" } }\n'
              'parameters { key: "strict" value: { string_value: "1" } }\n') if kind == "KIND_GPU" else ""
    # mlp: explicit config, dynamic batching, two instances; two outputs
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["z"]),
         helper.make_node("Relu", ["z"], ["y"]), helper.make_node("ReduceSum", ["z", "ax"], ["s"], keepdims=1)],
        "mlp", [vi("x", TensorProto.FLOAT, ["N", 16])], [vi("y", TensorProto.FLOAT, ["N", 8]),
                                                        vi("s", TensorProto.FLOAT, ["N", 1])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
         numpy_helper.from_array(np.array([1], np.int64), "ax")])
    save(os.path.join(root, "mlp"), g, f"""name: "mlp"
backend: "netrun"
max_batch_size: 16
input [ {{ name: "x", data_type: TYPE_FP32, dims: [ 16 ] }} ]
output [ {{ name: "y", data_type: TYPE_FP32, dims: [ 8 ] }}, {{ name: "s", data_type: TYPE_FP32, dims: [ 1 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 3000 }}
{group}
parameters {{ key: "threads" value: {{ string_value: "1" }} }}
parameters {{ key: "graph.optimize" value: {{ string_value: "1" }} }}
parameters {{ key: "warmup" value: {{ string_value: "all" }} }}
{on_gpu}""")
    # cnn: config.pbtxt names only the backend: inputs, outputs, max_batch_size come from the model
    wc = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["image", "wc"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["logits"])],
        "cnn", [vi("image", TensorProto.FLOAT, ["batch", 3, 8, 8])], [vi("logits", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(wc, "wc")])
    save(os.path.join(root, "cnn"), g, f'backend: "netrun"\n{group}\n')
    # seq: variable sequence length (int64 ids), requests of different lengths in one dynamic batch
    emb = rng.standard_normal((50, 4)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Gather", ["emb", "ids"], ["e"]),
         helper.make_node("ReduceMean", ["e"], ["pooled"], axes=[1], keepdims=0)],
        "seq", [vi("ids", TensorProto.INT64, ["B", "T"])], [vi("pooled", TensorProto.FLOAT, ["B", 4])],
        [numpy_helper.from_array(emb, "emb")])
    save(os.path.join(root, "seq"), g, f"""backend: "netrun"
max_batch_size: 8
input [ {{ name: "ids", data_type: TYPE_INT64, dims: [ -1 ] }} ]
output [ {{ name: "pooled", data_type: TYPE_FP32, dims: [ 4 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 20000 }}
{group}
""")
    # plain: no batching, int32, two inputs
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "plain",
                          [vi("a", TensorProto.INT32, [3]), vi("b", TensorProto.INT32, [3])],
                          [vi("c", TensorProto.INT32, [3])])
    save(os.path.join(root, "plain"), g, f"""backend: "netrun"
max_batch_size: 0
input [ {{ name: "a", data_type: TYPE_INT32, dims: [ 3 ] }}, {{ name: "b", data_type: TYPE_INT32, dims: [ 3 ] }} ]
output [ {{ name: "c", data_type: TYPE_INT32, dims: [ 3 ] }} ]
{group}
""")
    # clash: shapes the configuration lets through (-1) but the model cannot run: netrun fails the request
    g = helper.make_graph([helper.make_node("Add", ["p", "q"], ["r"])], "clash",
                          [vi("p", TensorProto.FLOAT, ["N", "A"]), vi("q", TensorProto.FLOAT, ["N", "B"])],
                          [vi("r", TensorProto.FLOAT, ["N", "C"])])
    save(os.path.join(root, "clash"), g, f"""backend: "netrun"
max_batch_size: 4
input [ {{ name: "p", data_type: TYPE_FP32, dims: [ -1 ] }}, {{ name: "q", data_type: TYPE_FP32, dims: [ -1 ] }} ]
output [ {{ name: "r", data_type: TYPE_FP32, dims: [ -1 ] }} ]
{group}
""")
    # models that must fail to load, each with its reason in the model's status
    save(os.path.join(root, "broken"), None, f'backend: "netrun"\n{group}\n', raw=b"this is not an onnx model")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "bp", [vi("x", TensorProto.FLOAT, [2])],
                          [vi("y", TensorProto.FLOAT, [2])])
    save(os.path.join(root, "badparam"), g, f"""backend: "netrun"
{group}
parameters {{ key: "precision" value: {{ string_value: "fp64" }} }}
""")
    save(os.path.join(root, "badbackend"), g, f"""backend: "netrun"
{group}
parameters {{ key: "backends" value: {{ string_value: "nosuchbackend" }} }}
parameters {{ key: "strict" value: {{ string_value: "1" }} }}
""")
    save(os.path.join(root, "badinput"), g, f"""backend: "netrun"
max_batch_size: 0
input [ {{ name: "nope", data_type: TYPE_FP32, dims: [ 2 ] }} ]
output [ {{ name: "y", data_type: TYPE_FP32, dims: [ 2 ] }} ]
{group}
""")
    return root


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def ok(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed.append(what)
            print(f"FAIL: {what}", flush=True)
        return cond


def ort_session(repo, name):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(os.path.join(repo, name, "1", "model.onnx"), so, providers=["CPUExecutionProvider"])


def infer(client, model, feeds, outputs=None):
    import tritonclient.http as th
    from tritonclient.utils import np_to_triton_dtype

    ins = []
    for k, v in feeds.items():
        t = th.InferInput(k, list(v.shape), np_to_triton_dtype(v.dtype))
        t.set_data_from_numpy(v, binary_data=True)
        ins.append(t)
    outs = [th.InferRequestedOutput(o, binary_data=True) for o in outputs] if outputs else None
    r = client.infer(model, ins, outputs=outs)
    return r


def expect_error(checks, client, server, what, fn, needle):
    from tritonclient.utils import InferenceServerException

    try:
        fn()
        checks.ok(False, f"{what}: no error")
    except InferenceServerException as e:
        msg = str(e)
        checks.ok(needle.lower() in msg.lower(), f"{what}: error '{msg}' does not mention '{needle}'")
        print(f"  {what}: {msg[:160]}")
    checks.ok(server.alive() and client.is_server_live(), f"{what}: server not live afterwards")


def test_correctness(checks, client, repo):
    rng = np.random.default_rng(11)
    for bs in (1, 3, 16):
        x = rng.standard_normal((bs, 16)).astype(np.float32)
        ref = ort_session(repo, "mlp").run(None, {"x": x})
        r = infer(client, "mlp", {"x": x})
        checks.ok(np.allclose(r.as_numpy("y"), ref[0], rtol=1e-5, atol=1e-5), f"mlp batch {bs}: y differs")
        checks.ok(np.allclose(r.as_numpy("s"), ref[1], rtol=1e-5, atol=1e-4), f"mlp batch {bs}: s differs")
        r = infer(client, "mlp", {"x": x}, outputs=["s"])  # only the requested output comes back
        checks.ok(r.as_numpy("y") is None and r.as_numpy("s").shape == (bs, 1), "mlp: requested output only")
    img = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    checks.ok(np.allclose(infer(client, "cnn", {"image": img}).as_numpy("logits"),
                          ort_session(repo, "cnn").run(None, {"image": img})[0], rtol=1e-4, atol=1e-5),
              "cnn (auto-completed) differs from onnxruntime")
    for t in (5, 9):
        ids = rng.integers(0, 50, (2, t)).astype(np.int64)
        checks.ok(np.allclose(infer(client, "seq", {"ids": ids}).as_numpy("pooled"),
                              ort_session(repo, "seq").run(None, {"ids": ids})[0], rtol=1e-5, atol=1e-6),
                  f"seq length {t} differs")
    a = np.array([1, 2, 3], np.int32)
    b = np.array([10, -20, 30], np.int32)
    c = infer(client, "plain", {"a": a, "b": b}).as_numpy("c")
    checks.ok(c is not None and c.dtype == np.int32 and (c == a + b).all(), f"plain: {c}")


def test_autocomplete(checks, client):
    cfg = client.get_model_config("cnn")
    checks.ok(cfg.get("max_batch_size") == 4, f"cnn max_batch_size auto-completed to {cfg.get('max_batch_size')}")
    ins, outs = cfg.get("input", []), cfg.get("output", [])
    checks.ok(len(ins) == 1 and ins[0]["name"] == "image" and ins[0]["data_type"] == "TYPE_FP32" and
              [int(d) for d in ins[0]["dims"]] == [3, 8, 8], f"cnn input auto-completed as {ins}")
    checks.ok(len(outs) == 1 and outs[0]["name"] == "logits" and [int(d) for d in outs[0]["dims"]] == [4],
              f"cnn output auto-completed as {outs}")
    checks.ok("dynamic_batching" in cfg, "cnn: dynamic batching was not turned on by auto-complete")


def test_concurrency(checks, server, repo, n_clients, n_requests):
    """n_clients threads x n_requests, each request a distinct input (its row tagged by client and index): every
    response must be the reference of its own input; the dynamic batcher must have gathered some of them."""
    import tritonclient.http as th

    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 4, (n_clients, n_requests))
    xs = [[rng.standard_normal((int(sizes[c, i]), 16)).astype(np.float32) for i in range(n_requests)]
          for c in range(n_clients)]
    sess = ort_session(repo, "mlp")
    allx = np.concatenate([x for row in xs for x in row])
    ref_y = sess.run(None, {"x": allx})[0]
    refs, k = [], 0
    for c in range(n_clients):
        row = []
        for i in range(n_requests):
            n = xs[c][i].shape[0]
            row.append(ref_y[k:k + n])
            k += n
        refs.append(row)
    stats0 = th.InferenceServerClient(server.url).get_inference_statistics("mlp")["model_stats"][0]
    bad, errors, done = [], [], [0] * n_clients

    def worker(c):
        cl = th.InferenceServerClient(server.url, connection_timeout=60, network_timeout=60)
        try:
            for i in range(n_requests):
                y = infer(cl, "mlp", {"x": xs[c][i]}, outputs=["y"]).as_numpy("y")
                if y is None or y.shape != refs[c][i].shape or not np.allclose(y, refs[c][i], rtol=1e-5, atol=1e-5):
                    bad.append((c, i))
                done[c] += 1
        except Exception as e:  # noqa: BLE001 - counted as a failure below
            errors.append(f"client {c}: {e}")
        finally:
            cl.close()

    t0 = time.time()
    threads = [threading.Thread(target=worker, args=(c,)) for c in range(n_clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    dt = time.time() - t0
    total = n_clients * n_requests
    stats1 = th.InferenceServerClient(server.url).get_inference_statistics("mlp")["model_stats"][0]
    n_inf = int(stats1["inference_count"]) - int(stats0["inference_count"])
    n_exec = int(stats1["execution_count"]) - int(stats0["execution_count"])
    print(f"  concurrency: {total} requests from {n_clients} clients in {dt:.1f} s; {n_inf} images in {n_exec} runs")
    checks.ok(not errors, f"concurrency: client errors {errors[:3]}")
    checks.ok(sum(done) == total, f"concurrency: {sum(done)} of {total} requests answered")
    checks.ok(not bad, f"concurrency: {len(bad)} responses not equal to their own input's reference: {bad[:5]}")
    checks.ok(n_inf == int(sizes.sum()), f"concurrency: server counted {n_inf} images, sent {int(sizes.sum())}")
    checks.ok(n_exec < total, f"concurrency: the dynamic batcher gathered nothing ({n_exec} runs for {total} requests)")


def test_ragged(checks, server, repo):
    """Requests of different sequence lengths arriving together: each length runs apart, each answer is right."""
    import tritonclient.http as th

    rng = np.random.default_rng(9)
    feeds = [rng.integers(0, 50, (1, t)).astype(np.int64) for t in (3, 7, 3, 7, 5, 3)]
    sess = ort_session(repo, "seq")
    results = [None] * len(feeds)

    def one(i):
        cl = th.InferenceServerClient(server.url)
        try:
            results[i] = infer(cl, "seq", {"ids": feeds[i]}).as_numpy("pooled")
        finally:
            cl.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(feeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i, f in enumerate(feeds):
        ref = sess.run(None, {"ids": f})[0]
        checks.ok(results[i] is not None and np.allclose(results[i], ref, rtol=1e-5, atol=1e-6),
                  f"ragged: request {i} (length {f.shape[1]}) wrong")


def test_errors(checks, client, server):
    import tritonclient.http as th

    x = np.zeros((1, 16), np.float32)

    def custom(name, shape, dtype, data):
        t = th.InferInput(name, shape, dtype)
        t.set_data_from_numpy(data, binary_data=True)
        return client.infer("mlp", [t])

    expect_error(checks, client, server, "unknown input", lambda: custom("nope", [1, 16], "FP32", x), "nope")
    expect_error(checks, client, server, "wrong dtype", lambda: custom("x", [1, 16], "FP64", x.astype(np.float64)),
                 "FP64")
    expect_error(checks, client, server, "wrong shape", lambda: custom("x", [1, 15], "FP32", x[:, :15].copy()),
                 "shape")
    expect_error(checks, client, server, "batch too big",
                 lambda: custom("x", [17, 16], "FP32", np.zeros((17, 16), np.float32)), "batch")
    expect_error(checks, client, server, "netrun refuses the shapes",
                 lambda: infer(client, "clash", {"p": np.ones((1, 3), np.float32), "q": np.ones((1, 4), np.float32)}),
                 "clash")
    r = infer(client, "clash", {"p": np.ones((2, 3), np.float32), "q": np.full((2, 3), 2, np.float32)})
    checks.ok(np.allclose(r.as_numpy("r"), 3.0), "clash: a good request after a failed one")
    checks.ok(np.allclose(infer(client, "mlp", {"x": x}).as_numpy("y"),
                          np.maximum(ort_session(server.repo, "mlp").run(None, {"x": x})[0], 0)),
              "mlp after the bad requests")


def test_bad_models(checks, client, server):
    from tritonclient.utils import InferenceServerException

    for name, needle in (("broken", "netrun cannot load"), ("badparam", "precision"),
                         ("badbackend", "nosuchbackend"), ("badinput", "nope")):
        try:
            client.load_model(name)
            checks.ok(False, f"model {name} loaded")
        except InferenceServerException as e:
            print(f"  load {name}: {str(e)[:200]}")
        idx = {m["name"]: m for m in client.get_model_repository_index()}
        reason = idx.get(name, {}).get("reason", "")
        checks.ok(needle.lower() in reason.lower(), f"model {name}: status reason '{reason}' lacks '{needle}'")
        checks.ok(not client.is_model_ready(name), f"model {name} is ready")
        checks.ok(server.alive(), f"server died loading {name}")


def test_unload_reload(checks, client, server):
    from tritonclient.utils import InferenceServerException

    x = np.ones((2, 16), np.float32)
    before = infer(client, "mlp", {"x": x}).as_numpy("y")
    client.unload_model("mlp")
    t0 = time.time()
    while client.is_model_ready("mlp") and time.time() - t0 < 30:
        time.sleep(0.1)
    checks.ok(not client.is_model_ready("mlp"), "mlp still ready after unload")
    try:
        infer(client, "mlp", {"x": x})
        checks.ok(False, "inference on an unloaded model succeeded")
    except InferenceServerException:
        pass
    client.load_model("mlp")
    checks.ok(client.is_model_ready("mlp"), "mlp not ready after reload")
    checks.ok(np.array_equal(infer(client, "mlp", {"x": x}).as_numpy("y"), before), "mlp output changed on reload")
    checks.ok(server.alive(), "server died on unload/reload")


def test_cuda_shm(checks, client, repo):
    """GPU-resident request and response buffers (CUDA shared memory registered by the client): the numbers must be
    right whether the backend reads them in place (device inputs) or copies them."""
    import base64

    import tritonclient.http as th
    try:
        rt = Cudart()
        probe = rt.malloc(16)
        rt.free(probe)
    except (OSError, RuntimeError) as e:
        print(f"  cuda_shm: no usable CUDA runtime ({e}), not checked")
        return
    x = np.random.default_rng(3).standard_normal((4, 16)).astype(np.float32)
    ref = ort_session(repo, "mlp").run(None, {"x": x})[0]
    y = np.zeros((4, 8), np.float32)
    dx, dy = rt.malloc(x.nbytes), rt.malloc(y.nbytes)
    try:
        rt.memcpy(dx, x.ctypes.data, x.nbytes, 1)  # host to device
        for name, ptr, size in (("netrun_in", dx, x.nbytes), ("netrun_out", dy, y.nbytes)):
            client.register_cuda_shared_memory(name, base64.b64encode(rt.ipc_handle(ptr)).decode(), 0, size)
        for rnd in range(3):  # repeated: a device-bound input is read in place every time, not once
            xr = x * (rnd + 1)
            rt.memcpy(dx, xr.ctypes.data, xr.nbytes, 1)
            want = ort_session(repo, "mlp").run(None, {"x": xr})[0]
            inp = th.InferInput("x", [4, 16], "FP32")
            inp.set_shared_memory("netrun_in", x.nbytes)
            out = th.InferRequestedOutput("y", binary_data=True)
            out.set_shared_memory("netrun_out", y.nbytes)
            client.infer("mlp", [inp], outputs=[out])
            rt.memcpy(y.ctypes.data, dy, y.nbytes, 2)  # device to host
            checks.ok(np.allclose(y, want, rtol=1e-5, atol=1e-5), f"cuda_shm round {rnd}: the output in GPU memory differs")
        # a host request after the device ones: the same model answers from host memory too
        hx = th.InferInput("x", [4, 16], "FP32")
        hx.set_data_from_numpy(x)
        got = client.infer("mlp", [hx]).as_numpy("y")
        checks.ok(np.allclose(got, ref, rtol=1e-5, atol=1e-5), "cuda_shm: a host request after device ones differs")
        print(f"  cuda_shm: input and output in GPU memory, 3 rounds, then a host request; max |diff| "
              f"{np.abs(got - ref).max():.2e}")
    finally:
        client.unregister_cuda_shared_memory()
        rt.free(dx)
        rt.free(dy)


def test_lean_client(checks, client, server, repo):
    """tools/bench/kserve_client.py, the benchmarks' lean client: outputs against onnxruntime over one keep-alive
    connection (new data each request, a new header per shape, several inputs and types, only the outputs asked
    for), an error answer that leaves the connection usable, an input in system shared memory, spin-wait."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "tools", "bench"))
    import tritonclient.utils.shared_memory as shm
    from kserve_client import KServeClient, KServeError

    rng = np.random.default_rng(5)
    mlp = ort_session(repo, "mlp")
    for spin in (False, True):
        kc = KServeClient(server.url, spin=spin)
        try:
            for bs in (1, 1, 3, 1):
                x = rng.standard_normal((bs, 16)).astype(np.float32)
                ref = mlp.run(None, {"x": x})
                got = kc.infer("mlp", {"x": x}, ["y", "s"])
                checks.ok(got["y"].shape == ref[0].shape and np.allclose(got["y"], ref[0], rtol=1e-5, atol=1e-5),
                          f"kserve_client (spin {spin}) mlp batch {bs}: y differs")
                checks.ok(np.allclose(got["s"], ref[1], rtol=1e-5, atol=1e-4),
                          f"kserve_client mlp batch {bs}: s differs")
            checks.ok(list(kc.infer("mlp", {"x": x}, ["s"])) == ["s"], "kserve_client: only the output asked for")
            a, b = np.array([1, 2, 3], np.int32), np.array([10, -20, 30], np.int32)
            c = kc.infer("plain", {"a": a, "b": b}, ["c"])["c"]
            checks.ok(c.dtype == np.int32 and (c == a + b).all(), f"kserve_client plain: {c}")
            for t in (5, 9):
                ids = rng.integers(0, 50, (2, t)).astype(np.int64)
                checks.ok(np.allclose(kc.infer("seq", {"ids": ids}, ["pooled"])["pooled"],
                                      ort_session(repo, "seq").run(None, {"ids": ids})[0], rtol=1e-5, atol=1e-6),
                          f"kserve_client seq length {t} differs")
            try:
                kc.infer("mlp", {"x": np.zeros((1, 15), np.float32)}, ["y"])
                checks.ok(False, "kserve_client: a wrong shape gave no error")
            except KServeError as e:
                checks.ok(e.status == 400 and "shape" in str(e).lower(), f"kserve_client: error '{e}'")
            checks.ok(kc.sock is not None, "kserve_client: the connection was dropped after an error answer")
            x = rng.standard_normal((2, 16)).astype(np.float32)
            checks.ok(np.allclose(kc.infer("mlp", {"x": x}, ["y"])["y"], mlp.run(None, {"x": x})[0], rtol=1e-5,
                                  atol=1e-5), "kserve_client: a request after an error differs")
        finally:
            kc.close()
    name = f"netrun_test_{os.getpid()}"
    x = rng.standard_normal((3, 16)).astype(np.float32)
    h = shm.create_shared_memory_region(name, "/" + name, x.nbytes)
    try:
        shm.set_shared_memory_region(h, [x])
        client.register_system_shared_memory(name, "/" + name, x.nbytes)
        kc = KServeClient(server.url)
        got = kc.infer("mlp", {"x": x}, ["y"], shm_inputs={"x": (name, x.nbytes, 0)})["y"]
        kc.close()
        checks.ok(np.allclose(got, mlp.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5),
                  "kserve_client: an input in system shared memory differs")
        client.unregister_system_shared_memory(name)
    finally:
        shm.destroy_shared_memory_region(h)
    print("  kserve_client: body and shared-memory inputs, several types and shapes, an error, spin-wait")


TESTS = ["correctness", "autocomplete", "concurrency", "ragged", "errors", "bad_models", "unload_reload",
         "lean_client", "cuda_shm"]
GOOD = ["mlp", "cnn", "seq", "plain", "clash"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend-dir", required=True, help="the folder holding libtriton_netrun.so")
    ap.add_argument("--kind", choices=["cpu", "gpu"], default="cpu", help="instance kind of the models")
    ap.add_argument("--only", default="", help="comma-separated subset of " + ",".join(TESTS))
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--keep", help="write the model repository and the server log here (kept)")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server's environment")
    a = ap.parse_args()
    stop_on_sigterm()
    so = os.path.join(a.backend_dir, "libtriton_netrun.so")
    if not os.path.exists(so):
        print(f"error: {so} not found (configure with -DNETRUN_TRITON=ON)")
        return 1
    try:
        import tritonclient.http  # noqa: F401
    except ImportError as e:
        print(f"SKIP: tritonclient[http] is not installed ({e}); tests/triton/requirements.txt says how")
        return SKIP
    only = [t for t in a.only.split(",") if t] or TESTS
    root = a.keep or tempfile.mkdtemp(prefix="netrun-triton-repo-")
    repo = build_repo(os.path.join(root, "repo"), "KIND_GPU" if a.kind == "gpu" else "KIND_CPU")
    env = dict(kv.split("=", 1) for kv in a.env)
    checks = Checks()
    server = TritonServer(repo, a.backend_dir, models=GOOD, env=env,
                          log_path=os.path.join(root, "server.log") if a.keep else None)
    try:
        server.__enter__()
    except CannotStart as e:
        print(f"SKIP: tritonserver from the nvidia-pytriton wheel cannot start here: {e}")
        return SKIP
    try:
        import tritonclient.http as th

        server.repo = repo
        client = th.InferenceServerClient(server.url, network_timeout=120)
        for m in GOOD:
            checks.ok(client.is_model_ready(m), f"model {m} is not ready")
        if checks.failed:
            print(server.log_tail(60))
            return 1
        for t in only:
            print(f"== {t}", flush=True)
            t0 = time.time()
            try:
                if t == "correctness":
                    test_correctness(checks, client, repo)
                elif t == "autocomplete":
                    test_autocomplete(checks, client)
                elif t == "concurrency":
                    test_concurrency(checks, server, repo, a.clients, a.requests)
                elif t == "ragged":
                    test_ragged(checks, server, repo)
                elif t == "errors":
                    test_errors(checks, client, server)
                elif t == "bad_models":
                    test_bad_models(checks, client, server)
                elif t == "unload_reload":
                    test_unload_reload(checks, client, server)
                elif t == "lean_client":
                    test_lean_client(checks, client, server, repo)
                elif t == "cuda_shm":
                    if a.kind == "gpu":
                        test_cuda_shm(checks, client, repo)
                    else:
                        print("  GPU only (--kind gpu)")
            except Exception:  # noqa: BLE001 - a crash of a check is a failure, and the server still stops
                checks.ok(False, f"{t}: {traceback.format_exc()}")
            print(f"   {time.time() - t0:.1f} s", flush=True)
        checks.ok(server.alive(), "server not alive at the end")
        client.close()
    finally:
        rc = server.stop()
        if checks.failed:
            print("---- server log (last lines) ----")
            print(server.log_tail(60))
        server.cleanup()
    print(f"server exit code {rc}")
    print(f"{checks.passed} passed, {len(checks.failed)} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())

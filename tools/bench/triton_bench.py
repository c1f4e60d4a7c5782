#!/usr/bin/env python3
"""Serving benchmark: netrun inside Triton Inference Server against netrun called directly and against Triton's
Python backend running onnxruntime (what users of the nvidia-pytriton wheel do today), in one run on one machine.

Models (built here with onnx.helper, random weights, no download): ResNet-50 (tools/bench/make_models.py's
torchvision-shaped graph, 1x3x224x224 float32 requests) and BERT-base (12 layers, hidden 768, 12 heads, FF 3072,
vocabulary 30522, opset 17 with LayerNormalization and erf GELU, int64 input_ids + attention_mask of --seq tokens,
a 2-class head; one request = one sequence). --models also takes the lighter ImageNet models of make_models.py
(mobilenetv2, shufflenetv2, squeezenet11, efficientnet_b0, mnasnet10: the same 602 KB requests, a run of a few
milliseconds on a CPU, where what serving adds weighs as it does for ResNet-50 on a GPU).

For each model, concurrency (--conc, default 1,4,16,64) and dynamic batching off / on (max_batch_size 8; on:
max_queue_delay 2 ms), both servers run with one instance (KIND_CPU, or KIND_GPU with --gpu); clients are
threads with a client each, sending binary tensors over 127.0.0.1, through each client of --clients (every row
names its client in brackets):
  tritonclient.http   NVIDIA's Python client (what most users run)
  kserve              tools/bench/kserve_client.py: the same HTTP/1.1 + binary-tensor protocol with the JSON header
                      built once and the arrays' bytes sent as they are (a fraction of the client's Python time)
Triton's Python backend is driven with tritonclient.http only. netrun instances plan every batch size at load
(parameter warmup: all). Per point: warm-up requests (2 x concurrency), then max(--requests, 2 x concurrency)
timed requests: throughput (requests/s) and latency p50 / p99 (ms, client side). --rounds (default 2) measures
each point that many times, the paths interleaved, and keeps the round of best throughput (best p50 for the direct
rows): on a machine shared with other work, the round least disturbed.

Direct rows: netrun through its C API (ctypes, the same options) and onnxruntime in this process, batch 1, one
call after another, measured between the served rounds. Paired ("what serving adds at concurrency 1"): netrun
direct and one Triton + netrun request alternated, 20+ times, for each client with the tensors in the HTTP body,
then in system shared memory, then (--gpu) in CUDA shared memory, and (--gpu) the kserve client polling its socket
instead of sleeping; the ratio of their medians is the measure of the goal (within 1.10), since both halves see
the same load; each variant's served outputs are checked against netrun direct's; and the server's own split of
the same requests (success = its whole handling; compute_infer from the backend's timestamps around
netrun_session_run). Also printed: Triton+netrun / Triton+Python+ORT throughput at every point, and with
--instances a scaling row (netrun with N instances of threads/N each, batching off, at the highest concurrency).

usage: python3 tools/bench/triton_bench.py --build build [--models resnet50,bert] [--conc 1,4,16,64]
       [--requests 32] [--rounds 2] [--seq 128] [--threads 2] [--instances 2] [--gpu] [--no-python]
       [--clients tritonclient.http,kserve] [--set KEY=VALUE] [--md out.md]
Needs the Triton test requirements (tests/triton/requirements*.txt) in the interpreter running it.
"""
import argparse
import datetime
import itertools
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "triton"))
from kserve_client import KServeClient  # noqa: E402
from triton_server import Cudart, TritonServer, stop_on_sigterm  # noqa: E402

MAX_BATCH = 8
NETRUN_SET = {}  # --set KEY=VALUE: netrun options of netrun direct and of the served netrun models alike


# ---------------------------------------------------------------------------------------------------- models
def bert_base(seq, layers=12, hidden=768, heads=12, ff=3072, vocab=30522, positions=512, seed=0):
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    dh = hidden // heads

    def w(name, *shape, scale=0.02):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def c(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def op(t, ins, out, **kw):
        nodes.append(helper.make_node(t, ins, [out], name=out, **kw))
        return out

    def ln(x, p):
        g = c(p + ".g", np.ones(hidden, np.float32) + rng.standard_normal(hidden).astype(np.float32) * 0.05)
        b = c(p + ".b", rng.standard_normal(hidden).astype(np.float32) * 0.05)
        return op("LayerNormalization", [x, g, b], p, axis=-1, epsilon=1e-12)

    def dense(x, p, fin, fout):
        return op("Add", [op("MatMul", [x, w(p + ".w", fin, fout)], p + ".mm"), w(p + ".b", fout)], p)

    e = op("Gather", [w("word_emb", vocab, hidden), "input_ids"], "emb.word")
    pos = c("pos_ids", np.arange(seq, dtype=np.int64)[None, :])
    e = op("Add", [e, op("Gather", [w("pos_emb", positions, hidden), pos], "emb.pos")], "emb.add")
    e = op("Add", [e, w("type_emb0", hidden)], "emb.type")
    h = ln(e, "emb.ln")
    m = op("Cast", [op("Unsqueeze", ["attention_mask", c("ax12", np.array([1, 2], np.int64))], "mask.u")],
           "mask.f", to=TensorProto.FLOAT)
    m = op("Mul", [op("Sub", [c("one", np.array(1, np.float32)), m], "mask.inv"),
                   c("neg", np.array(-10000.0, np.float32))], "mask.add")
    split = c("split_heads", np.array([0, 0, heads, dh], np.int64))
    merge = c("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = c("scale", np.array(1.0 / np.sqrt(dh), np.float32))
    for i in range(layers):
        p = f"l{i}"
        q = op("Transpose", [op("Reshape", [dense(h, p + ".q", hidden, hidden), split], p + ".qr")], p + ".qt",
               perm=[0, 2, 1, 3])
        k = op("Transpose", [op("Reshape", [dense(h, p + ".k", hidden, hidden), split], p + ".kr")], p + ".kt",
               perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [dense(h, p + ".v", hidden, hidden), split], p + ".vr")], p + ".vt",
               perm=[0, 2, 1, 3])
        s = op("Add", [op("Mul", [op("MatMul", [q, k], p + ".qk"), scale], p + ".sc"), m], p + ".sm")
        a = op("MatMul", [op("Softmax", [s], p + ".p", axis=-1), v], p + ".ctx")
        a = op("Reshape", [op("Transpose", [a], p + ".ct", perm=[0, 2, 1, 3]), merge], p + ".cm")
        h = ln(op("Add", [dense(a, p + ".o", hidden, hidden), h], p + ".res1"), p + ".ln1")
        f = dense(h, p + ".ff1", hidden, ff)
        g = op("Mul", [op("Mul", [f, op("Add", [op("Erf", [op("Div", [f, c(p + ".sq2", np.array(1.4142135, np.float32))],
                                                                    p + ".gd")], p + ".ge"),
                                             c(p + ".one", np.array(1, np.float32))], p + ".ga")], p + ".gm"),
                       c(p + ".half", np.array(0.5, np.float32))], p + ".gelu")
        h = ln(op("Add", [dense(g, p + ".ff2", ff, hidden), h], p + ".res2"), p + ".ln2")
    first = op("Gather", [h, c("zero", np.array(0, np.int64))], "cls", axis=1)
    pooled = op("Tanh", [dense(first, "pool", hidden, hidden)], "pooled")
    dense(pooled, "logits", hidden, 2)
    nodes[-1].output[0] = "logits"
    g = helper.make_graph(nodes, "bert_base",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", seq]),
                           helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", seq])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])], inits)
    mdl = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mdl.ir_version = 8
    return mdl


# ImageNet classifiers of tools/bench/make_models.py (1x3x224x224 float32 in, 1000 scores out): ResNet-50, and
# lighter ones whose run takes a few milliseconds on a CPU, as ResNet-50 does on a GPU (where what serving adds
# to a run weighs most)
IMAGE_MODELS = ("resnet50", "mobilenetv2", "shufflenetv2", "squeezenet11", "efficientnet_b0", "mnasnet10")


def make_model(name, out_dir, seq):
    """The model's ONNX file (built once into out_dir) and its outputs {name: dims without the batch}."""
    path = os.path.join(out_dir, f"{name}.onnx" if name in IMAGE_MODELS else f"bert_base_s{seq}.onnx")
    if not os.path.exists(path):
        if name in IMAGE_MODELS:
            import make_models
            m, bns = getattr(make_models, name)(0)
            make_models.calibrate(m, bns, 0)
        else:
            m = bert_base(seq)
        onnx.save(m, path)
    if name not in IMAGE_MODELS:
        return path, {"logits": [2]}
    out = onnx.load(path, load_external_data=False).graph.output[0].name
    return path, {out: [1000]}


def feeds_for(name, seq, rng):
    if name in IMAGE_MODELS:
        return {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
    ids = rng.integers(0, 30522, (1, seq)).astype(np.int64)
    mask = np.ones((1, seq), np.int64)
    mask[0, seq - seq // 8:] = 0
    return {"input_ids": ids, "attention_mask": mask}


# ---------------------------------------------------------------------------------------------------- repository
PY_MODEL = '''
import json, os, sys
sys.path[:0] = [p for p in os.environ.get("NETRUN_BENCH_SITE", "").split(":") if p]
import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        cfg = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in cfg.get("parameters", {}).items()}
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(params.get("threads", "0"))
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.inputs = [i["name"] for i in cfg["input"]]
        self.outputs = [o["name"] for o in cfg["output"]]

    def execute(self, requests):
        per = [[pb_utils.get_input_tensor_by_name(r, n).as_numpy() for n in self.inputs] for r in requests]
        feeds = {n: np.concatenate([p[i] for p in per]) for i, n in enumerate(self.inputs)}
        outs = self.sess.run(self.outputs, feeds)
        res, off = [], 0
        for p in per:
            b = p[0].shape[0]
            res.append(pb_utils.InferenceResponse([pb_utils.Tensor(n, o[off:off + b]) for n, o in zip(self.outputs, outs)]))
            off += b
        return res
'''


def tensor_cfg(name, feeds, outputs):
    def dt(a):
        return {np.dtype(np.float32): "TYPE_FP32", np.dtype(np.int64): "TYPE_INT64"}[a.dtype]
    ins = ", ".join(f'{{ name: "{k}", data_type: {dt(v)}, dims: [ {", ".join(str(d) for d in v.shape[1:])} ] }}'
                    for k, v in feeds.items())
    outs = ", ".join(f'{{ name: "{k}", data_type: TYPE_FP32, dims: [ {", ".join(str(d) for d in s)} ] }}'
                     for k, s in outputs.items())
    return f"input [ {ins} ]\noutput [ {outs} ]\n"


def write_model(repo, mname, backend, onnx_path, feeds, outputs, batching, instances, kind, threads, gpu):
    d = os.path.join(repo, mname)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    os.symlink(os.path.abspath(onnx_path), os.path.join(d, "1", "model.onnx"))
    cfg = f'backend: "{backend}"\nmax_batch_size: {MAX_BATCH}\n' + tensor_cfg(mname, feeds, outputs)
    if batching:
        cfg += "dynamic_batching { max_queue_delay_microseconds: 2000 }\n"
    cfg += f"instance_group [ {{ count: {instances}, kind: {kind} }} ]\n"
    cfg += f'parameters {{ key: "threads" value: {{ string_value: "{threads}" }} }}\n'
    if backend == "netrun":  # every batch size the batcher forms is planned at load, not in the timed requests
        cfg += 'parameters { key: "warmup" value: { string_value: "all" } }\n'
        for k, v in NETRUN_SET.items():
            cfg += f'parameters {{ key: "{k}" value: {{ string_value: "{v}" }} }}\n'
    if backend == "python":
        with open(os.path.join(d, "1", "model.py"), "w") as f:
            f.write(PY_MODEL)
    with open(os.path.join(d, "config.pbtxt"), "w") as f:
        f.write(cfg)
    return mname


# ---------------------------------------------------------------------------------------------------- load
def drive(url, model, feeds, conc, n_warm, n_timed, out_names, client="tritonclient.http"):
    """conc client threads, each with its own connection, sending requests until n_timed are done (after n_warm)."""
    import tritonclient.http as th
    from tritonclient.utils import np_to_triton_dtype

    lock = threading.Lock()
    state = {"left": n_warm, "lat": [], "err": []}

    def make_call():
        if client == "kserve":
            kc = KServeClient(url)
            return (lambda: kc.infer(model, feeds, out_names)), kc.close
        ins = []
        for k, v in feeds.items():
            t = th.InferInput(k, list(v.shape), np_to_triton_dtype(v.dtype))
            t.set_data_from_numpy(v, binary_data=True)
            ins.append(t)
        outs = [th.InferRequestedOutput(o, binary_data=True) for o in out_names]
        cl = th.InferenceServerClient(url, connection_timeout=300, network_timeout=300)
        return (lambda: cl.infer(model, ins, outputs=outs)), cl.close

    def worker(record):
        call, close = make_call()
        try:
            while True:
                with lock:
                    if state["left"] <= 0:
                        return
                    state["left"] -= 1
                t0 = time.perf_counter()
                call()
                dt = (time.perf_counter() - t0) * 1e3
                if record:
                    with lock:
                        state["lat"].append(dt)
        except Exception as e:  # noqa: BLE001 - reported, the point is dropped
            with lock:
                state["err"].append(str(e))
        finally:
            close()

    for record, n in ((False, n_warm), (True, n_timed)):
        state["left"] = n
        threads = [threading.Thread(target=worker, args=(record,)) for _ in range(conc)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    if state["err"]:
        raise RuntimeError(f"{model}: {len(state['err'])} errors, first: {state['err'][0]}")
    lat = sorted(state["lat"])
    return {"throughput": len(lat) / wall, "p50": percentile(lat, 50), "p99": percentile(lat, 99), "n": len(lat)}


def percentile(xs, p):
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def direct_netrun(lib, onnx_path, feeds, threads, n, backends):
    from netrun_ctypes import Netrun
    nr = Netrun(lib)
    with nr.session(onnx_path, backends=backends, threads=threads, options=NETRUN_SET) as s:
        for _ in range(3):
            s.run(feeds)
        lat = []
        for _ in range(n):
            t0 = time.perf_counter()
            s.run(feeds)
            lat.append((time.perf_counter() - t0) * 1e3)
    lat.sort()
    return {"throughput": 1e3 / statistics.mean(lat), "p50": percentile(lat, 50), "p99": percentile(lat, 99), "n": n}


_REGION_IDS = itertools.count()
CLIENTS = ("tritonclient.http", "kserve")  # the official Python client; tools/bench/kserve_client.py


def served_call(url, model, feeds, out_names, out_shapes, client="tritonclient.http", mem=None, spin=False):
    """One way of sending a request, set up once: returns (call, cleanup); call() sends the request and returns the
    outputs as host arrays {name: ndarray}.
    client: "tritonclient.http" (the official client, binary tensors) or "kserve" (kserve_client.py: the same
    HTTP/1.1 + binary-tensor protocol, the JSON header built once, the arrays' bytes sent as they are).
    mem: None (tensors in the HTTP body), "system" (system shared memory: Triton's protocol for a client on the same
    host) or "cuda" (CUDA shared memory: a GPU buffer of the client; with netrun's device inputs the backend reads
    the input where it lies). tritonclient puts inputs and outputs in the regions and reads the outputs back
    from there (a cudaMemcpy for CUDA); kserve puts the inputs there and takes the outputs in the response body
    (a classifier's output is a few KB: no region to read back, no GPU copy).
    spin: kserve waits for the response by polling its socket instead of sleeping in recv."""
    import tritonclient.http as th
    from tritonclient.utils import np_to_triton_dtype

    ctl = th.InferenceServerClient(url, network_timeout=300)  # requests (tritonclient) and region registration
    done = [ctl.close]
    regions = {}  # input name -> (region, bytes, offset)
    out_regions = {}
    out_sizes = [int(np.prod(out_shapes[o])) * 4 for o in out_names]  # float32 outputs
    in_bytes = sum(v.nbytes for v in feeds.values())
    tag = f"nrb{os.getpid()}_{next(_REGION_IDS)}"  # regions of several calls live side by side
    rin, rout = tag + "_in", tag + "_out"
    if mem:  # the inputs one after the other in one region, the outputs likewise in another
        off = 0
        for k, v in feeds.items():
            regions[k] = (rin, v.nbytes, off)
            off += v.nbytes
        off = 0
        for name, size in zip(out_names, out_sizes):
            out_regions[name] = (rout, size, off)
            off += size
    if mem == "cuda":
        import base64
        rt = Cudart()
        d_in = rt.malloc(in_bytes)
        d_out = rt.malloc(sum(out_sizes))
        for k, v in feeds.items():
            v = np.ascontiguousarray(v)
            rt.memcpy(d_in + regions[k][2], v.ctypes.data, v.nbytes, 1)
        ctl.register_cuda_shared_memory(rin, base64.b64encode(rt.ipc_handle(d_in)).decode(), 0, in_bytes)
        ctl.register_cuda_shared_memory(rout, base64.b64encode(rt.ipc_handle(d_out)).decode(), 0, sum(out_sizes))
        host_out = np.empty(sum(out_sizes), np.uint8)

        def fetch():  # the client's copy of its outputs back to the host
            rt.memcpy(host_out.ctypes.data, d_out, host_out.nbytes, 2)
            return host_out

        def drop():
            ctl.unregister_cuda_shared_memory(rin)
            ctl.unregister_cuda_shared_memory(rout)
            rt.free(d_in)
            rt.free(d_out)
    elif mem == "system":
        import tritonclient.utils.shared_memory as shm
        h_in = shm.create_shared_memory_region(rin, "/" + rin, in_bytes)
        h_out = shm.create_shared_memory_region(rout, "/" + rout, sum(out_sizes))
        shm.set_shared_memory_region(h_in, [np.ascontiguousarray(v) for v in feeds.values()])
        ctl.register_system_shared_memory(rin, "/" + rin, in_bytes)
        ctl.register_system_shared_memory(rout, "/" + rout, sum(out_sizes))

        def fetch():
            return shm.get_contents_as_numpy(h_out, np.uint8, [sum(out_sizes)])

        def drop():
            ctl.unregister_system_shared_memory(rin)
            ctl.unregister_system_shared_memory(rout)
            shm.destroy_shared_memory_region(h_in)
            shm.destroy_shared_memory_region(h_out)
    if mem:
        done.insert(0, drop)

        def read_back():
            raw = fetch()
            return {o: raw[off:off + size].view(np.float32).reshape(out_shapes[o]).copy()
                    for o, (_, size, off) in out_regions.items()}

    if client == "kserve":
        kc = KServeClient(url, spin=spin)
        done.insert(0, kc.close)

        def call():
            return kc.infer(model, feeds, out_names, shm_inputs=regions or None)
    else:
        ins = []
        for k, v in feeds.items():
            t = th.InferInput(k, list(v.shape), np_to_triton_dtype(v.dtype))
            if mem:
                t.set_shared_memory(regions[k][0], regions[k][1], offset=regions[k][2])
            else:
                t.set_data_from_numpy(v, binary_data=True)
            ins.append(t)
        outs = []
        for o in out_names:
            r = th.InferRequestedOutput(o, binary_data=True)
            if mem:
                r.set_shared_memory(out_regions[o][0], out_regions[o][1], offset=out_regions[o][2])
            outs.append(r)

        def call():
            res = ctl.infer(model, ins, outputs=outs)
            return read_back() if mem else {o: res.as_numpy(o) for o in out_names}

    def cleanup():
        for f in done:
            f()
    return call, cleanup


def paired(lib, url, model, onnx_path, feeds, threads, n, backends, out_names, out_shapes, client="tritonclient.http",
           mem=None, spin=False):
    """netrun direct and Triton + netrun (concurrency 1) alternated request by request, so that both see the same
    load from whatever else runs on the machine: the fairest measure of what serving adds to one inference.
    client / mem / spin: how the request travels (served_call). The outputs received are checked against netrun
    direct's. Returns (median direct ms, median served ms, the server's means of the same requests)."""
    from netrun_ctypes import Netrun
    call, cleanup = served_call(url, model, feeds, out_names, out_shapes, client, mem, spin)
    import tritonclient.http as th
    ctl = th.InferenceServerClient(url, network_timeout=300)
    d, t = [], []

    def stats():
        st = ctl.get_inference_statistics(model)["model_stats"][0]["inference_stats"]
        return {k: (int(v["count"]), int(v["ns"])) for k, v in st.items() if isinstance(v, dict) and "ns" in v}

    try:
        with Netrun(lib).session(onnx_path, backends=backends, threads=threads, options=NETRUN_SET) as s:
            for _ in range(3):
                want = s.run(feeds)
                got = call()
            check_outputs(want, got, out_names, f"{client}, {mem or 'body'}")
            st0 = stats()
            for _ in range(n):
                t0 = time.perf_counter()
                s.run(feeds)
                t1 = time.perf_counter()
                got = call()
                t2 = time.perf_counter()
                d.append((t1 - t0) * 1e3)
                t.append((t2 - t1) * 1e3)
            st1 = stats()
            check_outputs(s.outputs(), got, out_names, f"{client}, {mem or 'body'}")
    finally:
        cleanup()
        ctl.close()
    # the server's own split of those requests (means, ms): compute_infer is netrun_session_run inside the backend
    server = {k: (st1[k][1] - st0[k][1]) / max(1, st1[k][0] - st0[k][0]) / 1e6 for k in st1 if k in st0}
    return statistics.median(d), statistics.median(t), server


def check_outputs(want, got, out_names, what):
    """The served outputs against netrun direct's (same model and backends; a loose bound: a GPU instance may
    pick other algorithms than the direct session)."""
    for w, name in zip(want, out_names):
        g = got.get(name)
        if g is None or g.shape != w.shape:
            raise RuntimeError(f"{what}: output '{name}' is missing or has shape {None if g is None else g.shape}, "
                               f"not {w.shape}")
        err = float(np.max(np.abs(g.astype(np.float64) - w))) / max(1e-6, float(np.max(np.abs(w))))
        if not err <= 1e-3:
            raise RuntimeError(f"{what}: output '{name}' differs from netrun direct (max error {err:.2e} of the "
                               "largest value)")


def direct_ort(onnx_path, feeds, threads, n):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    s = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        s.run(None, feeds)
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        s.run(None, feeds)
        lat.append((time.perf_counter() - t0) * 1e3)
    lat.sort()
    return {"throughput": 1e3 / statistics.mean(lat), "p50": percentile(lat, 50), "p99": percentile(lat, 99), "n": n}


def paired_variants(a):
    """(client, memory, spin) of each concurrency-1 comparison: every client of --clients with tensors in the body,
    then in system shared memory, then (--gpu) CUDA shared memory; with --gpu also the lean client spin-waiting."""
    clients = [c for c in a.clients.split(",") if c]
    out = [(c, m, False) for m in (None, "system") + (("cuda",) if a.gpu else ()) for c in clients]
    if a.gpu and "kserve" in clients:
        out += [("kserve", None, True), ("kserve", "cuda", True)]
    return out


def variant_label(client, mem, spin):
    where = {None: "tensors in the HTTP body", "system": "inputs in system shared memory",
             "cuda": "inputs in CUDA shared memory"}[mem]
    if mem and client == "tritonclient.http":
        where = where.replace("inputs", "inputs and outputs")
    return f"client {client}{' (spin-wait)' if spin else ''}, {where}"


# ---------------------------------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build folder (-DNETRUN_TRITON=ON)")
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--conc", default="1,4,16,64")
    ap.add_argument("--requests", type=int, default=32, help="timed requests per point (at least 2 x concurrency)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per point, paths interleaved; the best is kept")
    ap.add_argument("--seq", type=int, default=128, help="BERT sequence length")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads per instance (netrun and ORT)")
    ap.add_argument("--instances", type=int, default=2, help="scaling row: this many netrun instances (0: none)")
    ap.add_argument("--gpu", action="store_true", help="KIND_GPU instances, netrun backends cuda,cpu")
    ap.add_argument("--no-python", action="store_true", help="leave out Triton's Python backend + onnxruntime")
    ap.add_argument("--model-dir", default=None, help="where the ONNX models are built (kept)")
    ap.add_argument("--clients", default="tritonclient.http,kserve",
                    help="clients of the concurrency-1 comparison: tritonclient.http (the official Python client), "
                         "kserve (tools/bench/kserve_client.py, the same protocol with less Python per request)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a netrun option for netrun direct and the served netrun models alike (repeatable), e.g. "
                         "cpu.spin_us=0: on a machine with few cores the idle spin of one process's CPU workers "
                         "slows the other's run in the alternated comparison")
    ap.add_argument("--md", help="also write the table as Markdown here")
    ap.add_argument("--json", help="write every number as JSON here")
    a = ap.parse_args()
    stop_on_sigterm()
    for kv in a.set:
        k, eq, v = kv.partition("=")
        if not eq or "." not in k:
            sys.exit(f"--set {kv}: KEY=VALUE with a netrun option key (it has a dot)")
        NETRUN_SET[k] = v
    backend_dir = os.path.join(a.build, "lib", "triton", "netrun")
    lib = os.path.join(a.build, "lib", "libnetrun.so")
    model_dir = a.model_dir or os.path.join(a.build, "bench-models")
    os.makedirs(model_dir, exist_ok=True)
    kind = "KIND_GPU" if a.gpu else "KIND_CPU"
    backends = "cuda,cpu" if a.gpu else "cpu"
    concs = [int(c) for c in a.conc.split(",")]
    clients = [c for c in a.clients.split(",") if c]
    for c in clients:
        if c not in CLIENTS:
            sys.exit(f"unknown client {c}: {', '.join(CLIENTS)}")
    rng = np.random.default_rng(1)
    rows, results = [], {}
    stamp = datetime.date.today().isoformat()
    machine = f"{platform.node()}, {os.cpu_count()} cores, {platform.processor() or platform.machine()}"
    load0 = os.getloadavg()[0]
    print(f"# triton_bench {stamp} on {machine}; threads {a.threads}; {kind}; load average {load0:.1f}"
          + (f"; netrun options {NETRUN_SET}" if NETRUN_SET else ""), flush=True)
    for name in [m for m in a.models.split(",") if m]:
        if name not in IMAGE_MODELS + ("bert",):
            sys.exit(f"unknown model {name}: bert or one of {', '.join(IMAGE_MODELS)}")
        path, outputs = make_model(name, model_dir, a.seq)
        feeds = feeds_for(name, a.seq, rng)
        n_direct = max(a.requests, 10)
        direct = {"nr": None, "ort": None}

        def measure_direct():
            """netrun and onnxruntime in this process, between the served rounds at the lowest concurrency (the
            server idle), so that the ratio compares measurements taken under the same load"""
            x = direct_netrun(lib, path, feeds, a.threads, n_direct, backends)
            print(f"{name}: netrun direct p50 {x['p50']:.2f} ms", flush=True)
            direct["nr"] = x if direct["nr"] is None or x["p50"] < direct["nr"]["p50"] else direct["nr"]
            if not a.gpu:
                x = direct_ort(path, feeds, a.threads, n_direct)
                print(f"{name}: onnxruntime direct p50 {x['p50']:.2f} ms", flush=True)
                direct["ort"] = x if direct["ort"] is None or x["p50"] < direct["ort"]["p50"] else direct["ort"]
        repo = tempfile.mkdtemp(prefix="netrun-triton-bench-")
        try:
            names = {}
            for batching in (False, True):
                tag = "db" if batching else "nodb"
                names[("netrun", batching)] = write_model(repo, f"{name}_netrun_{tag}", "netrun", path, feeds,
                                                          outputs, batching, 1, kind, a.threads, a.gpu)
                if not a.no_python:
                    names[("python", batching)] = write_model(repo, f"{name}_python_{tag}", "python", path, feeds,
                                                              outputs, batching, 1, "KIND_CPU", a.threads, a.gpu)
            if a.instances > 1:
                names[("netrun_x", False)] = write_model(repo, f"{name}_netrun_x{a.instances}", "netrun", path, feeds,
                                                         outputs, False, a.instances, kind,
                                                         max(1, a.threads // a.instances), a.gpu)
            site = [p for p in sys.path if p.endswith("site-packages")]
            env = {"NETRUN_BENCH_SITE": ":".join(site)}  # the stub's Python finds this venv's numpy/onnxruntime
            with TritonServer(repo, backend_dir, python_backend=not a.no_python, explicit=False, env=env,
                              start_timeout=300) as srv:
                import tritonclient.http as th
                cl = th.InferenceServerClient(srv.url)
                t0 = time.time()
                while time.time() - t0 < 300 and not all(cl.is_model_ready(m) for m in names.values()):
                    time.sleep(0.5)
                for m in names.values():
                    if not cl.is_model_ready(m):
                        raise RuntimeError(f"{m} did not load:\n{srv.log_tail()}")
                # (server path, client) of the sweep: Triton + Python + onnxruntime with the official client only
                sweep = [("netrun", c) for c in clients] + ([("python", CLIENTS[0])] if CLIENTS[0] in clients else [])
                for c in concs:
                    n = max(a.requests, 2 * c)
                    best = {}
                    # rounds interleave the paths, so that a neighbour's load on a shared machine hits both alike;
                    # each point keeps its round of best throughput
                    for rnd in range(a.rounds):
                        if c == concs[0]:
                            measure_direct()
                        for batching in (False, True):
                            for path_name, client in sweep:
                                key = (path_name, batching)
                                if key not in names:
                                    continue
                                r = drive(srv.url, names[key], feeds, c, c if rnd else 2 * c, n, list(outputs), client)
                                label = ("Triton + netrun" if path_name == "netrun" else
                                         "Triton + Python + onnxruntime") + f" [{client}]"
                                print(f"{name} c={c:<3} batching {'on ' if batching else 'off'} {label:<50} round {rnd} "
                                      f"{r['throughput']:8.2f} req/s  p50 {r['p50']:8.2f} ms  p99 {r['p99']:8.2f} ms",
                                      flush=True)
                                if (key, client) not in best or r["throughput"] > best[(key, client)][1]["throughput"]:
                                    best[(key, client)] = (label, r)
                    for batching in (False, True):
                        for path_name, client in sweep:
                            if ((path_name, batching), client) in best:
                                label, r = best[((path_name, batching), client)]
                                rows.append((name, label, "on" if batching else "off", c, r))
                                results[(name, path_name if client == CLIENTS[0] else path_name + " " + client,
                                         batching, c)] = r
                if concs[0] == 1:
                    shapes = {o: [1] + list(s) for o, s in outputs.items()}
                    for v in paired_variants(a):
                        pd, pt, sv = paired(lib, srv.url, names[("netrun", False)], path, feeds, a.threads,
                                            max(a.requests, 20), backends, list(outputs), shapes, *v)
                        results[(name, "paired") + v] = (pd, pt, sv)
                        print(f"{name}: paired, {variant_label(*v)}: medians netrun direct {pd:.2f} ms, Triton + netrun "
                              f"{pt:.2f} ms, ratio {pt / pd:.3f}; server means (ms): "
                              + ", ".join(f"{k} {x:.2f}" for k, x in sv.items()), flush=True)
                if ("netrun_x", False) in names:
                    c = max(concs)
                    r = None
                    for rnd in range(a.rounds):
                        x = drive(srv.url, names[("netrun_x", False)], feeds, c, c if rnd else 2 * c,
                                  max(a.requests, 2 * c), list(outputs))
                        r = x if r is None or x["throughput"] > r["throughput"] else r
                    label = (f"Triton + netrun, {a.instances} instances x {max(1, a.threads // a.instances)} threads "
                             f"[{CLIENTS[0]}]")
                    rows.append((name, label, "off", c, r))
                    results[(name, "netrun_x", False, c)] = r
                    print(f"{name} c={c:<3} batching off {label} {r['throughput']:8.2f} req/s  p50 {r['p50']:8.2f} ms",
                          flush=True)
                cl.close()
        finally:
            shutil.rmtree(repo, ignore_errors=True)
        d_nr, d_ort = direct["nr"], direct["ort"]
        if d_nr:
            rows.append((name, "netrun direct (C API)", "-", 1, d_nr))
            results[(name, "direct", None, 1)] = d_nr
        if d_ort:
            rows.append((name, "onnxruntime direct", "-", 1, d_ort))
            results[(name, "ort_direct", None, 1)] = d_ort
    # ---- table and ratios ----
    lines = [f"Machine: {machine}; {stamp}; threads per instance {a.threads}; {kind}; max_batch_size {MAX_BATCH}; "
             f"1-minute load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
             + (f"; netrun options {NETRUN_SET}." if NETRUN_SET else "."),
             "", "| model | path | dyn. batching | concurrency | req/s | p50 ms | p99 ms |", "|---|---|---|---|---|---|---|"]
    for name, label, b, c, r in rows:
        lines.append(f"| {name} | {label} | {b} | {c} | {r['throughput']:.2f} | {r['p50']:.2f} | {r['p99']:.2f} |")
    lines += ["", "| model | ratio | value | goal |", "|---|---|---|---|"]
    for name in [m for m in a.models.split(",") if m]:
        d = results.get((name, "direct", None, 1))
        for v in paired_variants(a):
            pr = results.get((name, "paired") + v)
            if not pr:
                continue
            ratio = pr[1] / pr[0]
            lines.append(f"| {name} | Triton+netrun / netrun direct, concurrency 1, requests alternated one by one, "
                         f"{variant_label(*v)} (medians {pr[1]:.2f} / {pr[0]:.2f} ms) | {ratio:.3f} | <= 1.10 "
                         f"{'met' if ratio <= 1.10 else 'NOT met'} |")
            sv = pr[2]
            if sv.get("success"):  # the server's whole handling of the same requests: the rest is HTTP and client
                lines.append(f"| {name} | ... of which the server's handling (success {sv['success']:.2f} ms: "
                             f"compute_infer {sv.get('compute_infer', 0):.2f}, input {sv.get('compute_input', 0):.2f}, "
                             f"output {sv.get('compute_output', 0):.2f}, queue {sv.get('queue', 0):.2f}) / netrun "
                             f"direct | {sv['success'] / pr[0]:.3f} | |")
        for client in clients:
            t1 = results.get((name, "netrun" if client == CLIENTS[0] else "netrun " + client, False, 1))
            if d and t1:
                lines.append(f"| {name} | Triton+netrun p50 [{client}] / netrun direct p50, concurrency 1, best rounds | "
                             f"{t1['p50'] / d['p50']:.3f} | |")
        for c in concs:
            for b in (False, True):
                x, y = results.get((name, "netrun", b, c)), results.get((name, "python", b, c))
                if x and y:
                    lines.append(f"| {name} | throughput Triton+netrun / Triton+Python+ORT, c={c}, batching "
                                 f"{'on' if b else 'off'} | {x['throughput'] / y['throughput']:.2f} | |")
        xs, one = results.get((name, "netrun_x", False, max(concs))), results.get((name, "netrun", False, max(concs)))
        if xs and one:
            lines.append(f"| {name} | throughput {a.instances} instances / 1 instance, c={max(concs)}, batching off | "
                         f"{xs['throughput'] / one['throughput']:.2f} | > 1 |")
    text = "\n".join(lines)
    print("\n" + text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([{"model": n, "path": lab, "batching": b, "concurrency": c, **r} for n, lab, b, c, r in rows], f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

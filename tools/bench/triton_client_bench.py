#!/usr/bin/env python3
"""Where a Triton request's time goes outside the model: one request at a time (concurrency 1) to a model whose
run costs next to nothing, through each client, against the server's own count of the same requests.

The model (netrun backend, built with onnx.helper): y = Slice(x, first min(N, 1000) values) + 1, float32 x of
1 x N. N = 16 (overhead only) and N = 150528 (a ResNet-50 image, 602 KB in, 4 KB out). Clients, each with its own
keep-alive connection, interleaved in rounds (medians over all their requests):
  tritonclient.http        the official Python client, binary tensors (what the other benchmarks use)
  tritonclient.grpc        the official gRPC client (when grpcio imports; tools/bench/requirements.txt pins it)
  kserve                   tools/bench/kserve_client.py: the same HTTP protocol, JSON header built once, the
                           array's bytes sent by sendmsg, the response read into a kept buffer
  kserve + shm             the same with the input in a registered system shared-memory region (the output in
                           the response body)
  kserve + shm, spin-wait  the same, polling the socket for the response instead of sleeping in recv
  tritonclient.http + shm  the official client with input and output in shared memory
  C (kserve_floor.c)       kserve_client.py's requests sent from C (compiled here when a C compiler is found): the
                           floor under any client, what the server and the kernel cost; + shm likewise
  --gpu: KIND_GPU instances (netrun's cuda backend) and the same with the input in CUDA shared memory
  (tritonclient.http: the output too, copied back with cudaMemcpy)
Every response's output is checked against numpy. Per client: median client latency, the server's mean request
time for the same requests (inference statistics 'success': from the request reaching the server core to its
response being released; compute_input: the backend taking the inputs) and the client CPU time per request
(time.process_time of this process; the C client's own).

usage: python3 tools/bench/triton_client_bench.py --build build [--sizes 16,150528] [--requests 200] [--rounds 3]
       [--gpu]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "triton"))
from triton_bench import served_call  # noqa: E402
from triton_server import SKIP, CannotStart, TritonServer, stop_on_sigterm  # noqa: E402


def slice_add_model(n):
    k = min(n, 1000)
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"]),
             helper.make_node("Add", ["s", "one"], ["y"])]
    inits = [helper.make_tensor("st", TensorProto.INT64, [1], [0]),
             helper.make_tensor("en", TensorProto.INT64, [1], [k]),
             helper.make_tensor("ax", TensorProto.INT64, [1], [1]),
             helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])]
    g = helper.make_graph(nodes, "slice_add", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", k])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, k


def write_repo(repo, sizes, gpu=False):
    names = {}
    for n in sizes:
        m, k = slice_add_model(n)
        d = os.path.join(repo, f"slice_add_{n}", "1")
        os.makedirs(d)
        onnx.save(m, os.path.join(d, "model.onnx"))
        with open(os.path.join(repo, f"slice_add_{n}", "config.pbtxt"), "w") as f:
            f.write(f'backend: "netrun"\nmax_batch_size: 8\n'
                    f'input [ {{ name: "x", data_type: TYPE_FP32, dims: [ {n} ] }} ]\n'
                    f'output [ {{ name: "y", data_type: TYPE_FP32, dims: [ {k} ] }} ]\n'
                    f'instance_group [ {{ count: 1, kind: {"KIND_GPU" if gpu else "KIND_CPU"} }} ]\n'
                    'parameters { key: "threads" value: { string_value: "1" } }\n')
        names[n] = (f"slice_add_{n}", k)
    return names


class Clients:
    """Each client as a callable returning the output y, set up once (connections, shared-memory regions)."""

    def __init__(self, srv, model, x, k, use_grpc, gpu, floor_exe):
        import tritonclient.http as th
        self.cleanups = []
        self.calls = {}
        self.loops = {}  # clients that run a whole round themselves: label -> f(n) -> (latencies, CPU per request), us
        shapes = {"y": [1, k]}

        def add(label, client, mem, spin=False):
            call, cleanup = served_call(srv.url, model, {"x": x}, ["y"], shapes, client, mem, spin)
            self.cleanups.append(cleanup)
            self.calls[label] = lambda: call()["y"]
        add("tritonclient.http", "tritonclient.http", None)
        if use_grpc:
            import tritonclient.grpc as tg
            g = tg.InferenceServerClient(srv.grpc_url)
            self.cleanups.append(g.close)
            gin = tg.InferInput("x", list(x.shape), "FP32")
            gin.set_data_from_numpy(x)
            gout = [tg.InferRequestedOutput("y")]
            self.calls["tritonclient.grpc"] = lambda: g.infer(model, [gin], outputs=gout).as_numpy("y")
        add("kserve", "kserve", None)
        add("kserve + shm", "kserve", "system")
        add("kserve + shm, spin-wait", "kserve", "system", True)
        add("tritonclient.http + shm", "tritonclient.http", "system")
        if gpu:
            add("kserve + CUDA shm", "kserve", "cuda")
            add("kserve + CUDA shm, spin-wait", "kserve", "cuda", True)
            add("tritonclient.http + CUDA shm", "tritonclient.http", "cuda")
        ctl = th.InferenceServerClient(srv.url)
        self.cleanups.append(ctl.close)
        if floor_exe:
            self.add_floor(srv, model, x.size, k, floor_exe, ctl)
        self.stats = lambda: ctl.get_inference_statistics(model)["model_stats"][0]["inference_stats"]

    def add_floor(self, srv, model, n, k, exe, ctl):
        """kserve_floor.c: the same requests sent from C (its own input pattern, checked by itself)."""
        import tritonclient.utils.shared_memory as shm
        host, port = srv.url.rsplit(":", 1)
        region = f"nr_cf_{os.getpid()}_{n}"
        xf = ((np.arange(n) % 97) * 0.25).astype(np.float32)[None, :]
        h = shm.create_shared_memory_region(region, "/" + region, xf.nbytes)
        shm.set_shared_memory_region(h, [xf])
        ctl.register_system_shared_memory(region, "/" + region, xf.nbytes)

        def drop():
            ctl.unregister_system_shared_memory(region)
            shm.destroy_shared_memory_region(h)
        self.cleanups.insert(0, drop)

        def loop(reqs, shm_region=None):
            args = [exe, host, port, model, str(n), str(k), str(reqs)] + ([shm_region] if shm_region else [])
            r = subprocess.run(args, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"kserve_floor: {r.stderr.strip()[:300]}")
            lines = r.stdout.split("\n")
            cpu = [float(ln.split()[1]) for ln in lines if ln.startswith("cpu ")]
            return [float(v) for v in lines if v and not v.startswith("cpu ")], cpu[0]
        self.loops["C (kserve_floor.c)"] = loop
        self.loops["C (kserve_floor.c) + shm"] = lambda reqs: loop(reqs, region)

    def close(self):
        for f in self.cleanups:
            f()


def build_floor(out_dir):
    """kserve_floor.c compiled with the machine's C compiler, or None (then its rows are left out)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("(C rows left out: no C compiler)")
        return None
    exe = os.path.join(out_dir, "kserve_floor")
    r = subprocess.run([cc, "-O2", "-o", exe, os.path.join(HERE, "kserve_floor.c")], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"(C rows left out: {r.stderr.strip()[:200]})")
        return None
    return exe


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sizes", default="16,150528")
    ap.add_argument("--requests", type=int, default=200, help="requests per client per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gpu", action="store_true", help="KIND_GPU instances (netrun backends cuda,cpu), and the clients "
                    "with the input in CUDA shared memory")
    ap.add_argument("--backend-dir", help="the netrun backend's folder (default BUILD/lib/triton/netrun)")
    a = ap.parse_args()
    stop_on_sigterm()
    try:
        import tritonclient.grpc  # noqa: F401
        use_grpc = True
    except (ImportError, RuntimeError) as e:  # tritonclient without its grpc extra raises RuntimeError
        print(f"(tritonclient.grpc left out: {e})")
        use_grpc = False
    sizes = [int(s) for s in a.sizes.split(",")]
    repo = tempfile.mkdtemp(prefix="netrun-client-bench-")
    rng = np.random.default_rng(0)
    print(f"# triton_client_bench on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    try:
        models = os.path.join(repo, "models")
        names = write_repo(models, sizes, a.gpu)
        floor_exe = build_floor(repo)
        backend_dir = a.backend_dir or os.path.join(a.build, "lib", "triton", "netrun")
        try:
            return measure(a, TritonServer(models, backend_dir, explicit=False, grpc=use_grpc), names, sizes, use_grpc,
                           floor_exe, rng)
        except CannotStart as e:
            print(f"SKIP: tritonserver cannot start here: {e}")
            return SKIP
    finally:
        shutil.rmtree(repo, ignore_errors=True)


def measure(a, server, names, sizes, use_grpc, floor_exe, rng):
    """Every client against every model size on the started server; prints a table per size."""
    with server as srv:
        import tritonclient.http as th
        c0 = th.InferenceServerClient(srv.url)
        t0 = time.time()
        while not all(c0.is_model_ready(m) for m, _ in names.values()):
            if time.time() - t0 > 120:
                raise RuntimeError(srv.log_tail())
            time.sleep(0.2)
        c0.close()
        for n in sizes:
            model, k = names[n]
            x = rng.standard_normal((1, n)).astype(np.float32)
            want = x[:, :k] + 1
            cl = Clients(srv, model, x, k, use_grpc, a.gpu, floor_exe)
            labels = list(cl.calls) + list(cl.loops)
            lat = {c: [] for c in labels}
            cpu = {c: [] for c in labels}
            handled = {c: [] for c in labels}
            cin = {c: [] for c in labels}
            for c, f in cl.calls.items():  # warm-up and the check
                for _ in range(10):
                    y = f()
                if not np.allclose(y, want, rtol=0, atol=1e-6):
                    raise RuntimeError(f"{c}: wrong output")

            def python_loop(f, reqs):
                out = []
                for _ in range(reqs):
                    t = time.perf_counter()
                    f()
                    out.append((time.perf_counter() - t) * 1e6)
                if not np.allclose(f(), want, rtol=0, atol=1e-6):
                    raise RuntimeError(f"{c}: wrong output")
                return out
            for rnd in range(a.rounds):
                order = labels if rnd % 2 == 0 else labels[::-1]
                for c in order:
                    s0 = cl.stats()
                    if c in cl.loops:
                        got, per = cl.loops[c](a.requests)
                        lat[c] += got
                        cpu[c].append(per)
                    else:
                        p0 = time.process_time()
                        lat[c] += python_loop(cl.calls[c], a.requests)
                        cpu[c].append((time.process_time() - p0) / a.requests * 1e6)
                    s1 = cl.stats()
                    for stat, into in (("success", handled), ("compute_input", cin)):
                        a0, a1 = s0[stat], s1[stat]
                        into[c].append((int(a1["ns"]) - int(a0["ns"])) / max(1, int(a1["count"]) - int(a0["count"]))
                                       / 1e3)
            cl.close()
            print(f"\n{model}: {n * 4} bytes in, {k * 4} bytes out; {a.rounds} rounds x {a.requests} requests per "
                  f"client (load average {os.getloadavg()[0]:.1f})")
            print("| client | median us | p90 us | server 'success' us | of which compute_input us "
                  "| outside the server us | client CPU us |")
            print("|---|---|---|---|---|---|---|")
            for c in labels:
                lt = sorted(lat[c])
                med, sv = statistics.median(lt), statistics.median(handled[c])
                print(f"| {c} | {med:.0f} | {lt[int(len(lt) * 0.9)]:.0f} | {sv:.0f} | "
                      f"{statistics.median(cin[c]):.0f} | {med - sv:.0f} | {statistics.median(cpu[c]):.0f} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

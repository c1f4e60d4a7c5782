"""Start and stop a tritonserver from the nvidia-pytriton wheel on loopback ports, for the netrun backend's tests,
its benchmark (tools/bench/triton_bench.py) and the GPU script (tools/gpu/run-triton-gpu.sh).

The wheel (PyPI nvidia-pytriton, installed with --no-deps: only its binaries are used) holds
pytriton/tritonserver/bin/tritonserver, its libraries in nvidia_pytriton.libs/, Triton's Python backend and the
Python backend's stub per Python version. A backend folder is laid out in a temporary directory: netrun -> the
built backend folder, and python/ with the stub of this interpreter's version when asked for.
"""
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77  # ctest's SKIP_RETURN_CODE


class CannotStart(Exception):
    """The wheel is missing or its tritonserver does not start on this machine (a skip, not a failure)."""


def wheel_dir():
    spec = importlib.util.find_spec("pytriton")  # no import: the package's Python side is not installed whole
    if spec is None or not spec.submodule_search_locations:
        raise CannotStart("the nvidia-pytriton wheel is not installed (tests/triton/requirements.txt says how)")
    d = spec.submodule_search_locations[0]
    exe = os.path.join(d, "tritonserver", "bin", "tritonserver")
    if not os.path.exists(exe):
        raise CannotStart(f"{exe} is missing")
    return d


def _die_with_parent():
    """In the child: SIGTERM when the process that started it dies, even by SIGKILL (a test killed at its
    timeout), so that no server outlives its test."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the normal stop still applies
        pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_on_sigterm():
    """SIGTERM ends the caller through SystemExit, so that its `with TritonServer` blocks stop their servers."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class TritonServer:
    """tritonserver on 127.0.0.1:<free port> (HTTP only; grpc=True adds gRPC on another port, `grpc_url`). Use as a
    context manager: the server is stopped on exit, whatever happened (SIGTERM, then SIGKILL after `stop_timeout`
    seconds)."""

    def __init__(self, repo, netrun_backend_dir, python_backend=False, explicit=True, models=(), env=None,
                 extra_args=(), log_path=None, start_timeout=90, stop_timeout=30, grpc=False):
        self.repo = repo
        self.netrun_dir = os.path.abspath(netrun_backend_dir)
        self.python_backend = python_backend
        self.explicit = explicit
        self.models = list(models)
        self.env = dict(env or {})
        self.extra_args = list(extra_args)
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.tmp = tempfile.mkdtemp(prefix="netrun-triton-")
        self.log_path = log_path or os.path.join(self.tmp, "server.log")
        self.proc = None
        self.port = None
        self.grpc = grpc
        self.grpc_port = None

    # ---- layout ----
    def _backend_dir(self, wd):
        b = os.path.join(self.tmp, "backends")
        os.makedirs(b)
        os.symlink(self.netrun_dir, os.path.join(b, "netrun"))
        if self.python_backend:
            py = os.path.join(b, "python")
            src = os.path.join(wd, "tritonserver", "backends", "python")
            shutil.copytree(src, py)
            ver = f"{sys.version_info.major}.{sys.version_info.minor}"
            stub = os.path.join(wd, "tritonserver", "python_backend_stubs", ver, "triton_python_backend_stub")
            if not os.path.exists(stub):
                raise CannotStart(f"the wheel has no Python backend stub for Python {ver}")
            shutil.copy2(stub, py)
        return b

    def start(self):
        wd = wheel_dir()
        exe = os.path.join(wd, "tritonserver", "bin", "tritonserver")
        libs = os.path.join(os.path.dirname(wd), "nvidia_pytriton.libs")
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = libs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env.update(self.env)
        self.port = free_port()
        args = [exe, f"--model-repository={self.repo}", f"--backend-directory={self._backend_dir(wd)}",
                "--http-address=127.0.0.1", f"--http-port={self.port}",
                "--allow-metrics=false", "--exit-timeout-secs=10", "--log-verbose=0"]
        if self.grpc:
            self.grpc_port = free_port()
            args += ["--allow-grpc=true", "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}"]
        else:
            args.append("--allow-grpc=false")
        if self.explicit:
            args.append("--model-control-mode=explicit")
            args += [f"--load-model={m}" for m in self.models]
        args += self.extra_args
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.time() + self.start_timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise CannotStart(f"tritonserver exited with {self.proc.returncode} at start:\n{self.log_tail()}")
            if self._get("/v2/health/live") == 200:
                return self
            time.sleep(0.2)
        self.stop()
        raise CannotStart(f"tritonserver did not answer within {self.start_timeout} s:\n{self.log_tail()}")

    def _get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return r.status
        except Exception:
            return None

    @property
    def url(self):
        return f"127.0.0.1:{self.port}"

    @property
    def grpc_url(self):
        return f"127.0.0.1:{self.grpc_port}" if self.grpc_port else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None and self._get("/v2/health/live") == 200

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        if getattr(self, "log", None):
            self.log.close()
            self.log = None
        return self.proc.returncode if self.proc else None

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            self.cleanup()
            raise

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()
        return False


class Cudart:
    """The few CUDA runtime calls that CUDA shared memory needs (the test and tools/bench/triton_bench.py), through
    ctypes: cupy is not on the GPU machine, torch brings a libcudart. Whole allocations, because an IPC handle maps
    its allocation."""

    def __init__(self):
        import ctypes
        import glob
        names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
        try:
            import torch  # its nvidia wheels carry a libcudart
            base = os.path.dirname(os.path.dirname(torch.__file__))
            names = glob.glob(os.path.join(base, "nvidia", "*", "lib", "libcudart.so*")) + names
        except ImportError:
            pass
        self.lib = None
        for n in names:
            try:
                self.lib = ctypes.CDLL(n)
                break
            except OSError:
                continue
        if self.lib is None:
            raise OSError("no libcudart")
        self.c = ctypes

    def _ok(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: CUDA error {rc}")

    def malloc(self, n):
        p = self.c.c_void_p()
        self._ok(self.lib.cudaMalloc(self.c.byref(p), self.c.c_size_t(n)), "cudaMalloc")
        return p.value

    def free(self, p):
        self.lib.cudaFree(self.c.c_void_p(p))

    def memcpy(self, dst, src, n, kind):
        self._ok(self.lib.cudaMemcpy(self.c.c_void_p(dst), self.c.c_void_p(src), self.c.c_size_t(n), kind), "cudaMemcpy")

    def ipc_handle(self, p):
        buf = (self.c.c_char * 64)()
        self._ok(self.lib.cudaIpcGetMemHandle(buf, self.c.c_void_p(p)), "cudaIpcGetMemHandle")
        return bytes(buf)

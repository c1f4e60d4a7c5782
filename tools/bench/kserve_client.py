"""A lean KServe v2 inference client: one keep-alive HTTP/1.1 connection, tensors as raw bytes through the binary
tensor extension (`Inference-Header-Content-Length`), nothing but the Python standard library and numpy.

Why it exists: a request through `tritonclient.http` costs its caller about 100 us of Python for a tiny tensor and
300-400 us for a 602 KB image on a 2-core Xeon VM (its per-tensor objects, JSON built and parsed per request,
gevent's HTTP client, the tensors copied into one body); tools/bench/triton_client_bench.py measures it. This
client builds the JSON header once per set of input shapes (padded so that the tensors after it are aligned),
sends it and the input arrays' own buffers with one sendmsg (scatter-gather, no copy into a body) and reads the
response into a buffer it keeps: 22-25 us of Python for a tiny tensor, 95-200 us for the image (docs/triton.md,
"Clients"). The request is an
ordinary inference request to tritonserver's HTTP front end, which any HTTP library could send.

    c = KServeClient("127.0.0.1:8000")
    outs = c.infer("resnet50", {"input": x}, ["fc"])   # {"fc": np.ndarray}
    c.close()
"""
import json
import socket
import time

import numpy as np

_DTYPES = {np.dtype(np.float32): "FP32", np.dtype(np.float16): "FP16", np.dtype(np.float64): "FP64",
           np.dtype(np.int64): "INT64", np.dtype(np.int32): "INT32", np.dtype(np.int16): "INT16",
           np.dtype(np.int8): "INT8", np.dtype(np.uint8): "UINT8", np.dtype(np.bool_): "BOOL"}
_NP = {v: k for k, v in _DTYPES.items()}


class KServeError(RuntimeError):
    """status: the HTTP status of an error the server answered (the connection stays usable), else None (a broken
    connection or response: the next request opens a new connection)."""

    def __init__(self, msg, status=None):
        super().__init__(msg)
        self.status = status


class KServeClient:
    def __init__(self, url, timeout=300.0, spin=False):
        """spin: wait for a response by polling the socket (a busy core) instead of sleeping in recv: saves the
        client's wake-up when the server answers, at the cost of one core while it waits."""
        host, _, port = url.rpartition(":")
        self.host, self.port, self.timeout, self.spin = host or "127.0.0.1", int(port), timeout, spin
        self.sock = None
        self.buf = bytearray(1 << 16)
        self.heads = {}  # (model, input names/shapes/dtypes, outputs) -> request head bytes

    def _connect(self):
        s = socket.create_connection((self.host, self.port), timeout=self.timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # the head and the body leave at once
        self.sock = s

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _head(self, model, inputs, outputs, shm_inputs, shm_outputs):
        key = (model, tuple((k, v.shape, v.dtype.str) for k, v in inputs.items()), tuple(outputs),
               tuple(shm_inputs.items()) if shm_inputs else None, tuple(shm_outputs.items()) if shm_outputs else None)
        h = self.heads.get(key)
        if h is None:
            ins = []
            for k, v in inputs.items():
                p = ({"shared_memory_region": shm_inputs[k][0], "shared_memory_byte_size": shm_inputs[k][1],
                      "shared_memory_offset": shm_inputs[k][2]} if shm_inputs and k in shm_inputs
                     else {"binary_data_size": v.nbytes})
                ins.append({"name": k, "shape": list(v.shape), "datatype": _DTYPES[v.dtype], "parameters": p})
            outs = []
            for o in outputs:
                p = ({"shared_memory_region": shm_outputs[o][0], "shared_memory_byte_size": shm_outputs[o][1],
                      "shared_memory_offset": shm_outputs[o][2]} if shm_outputs and o in shm_outputs
                     else {"binary_data": True})
                outs.append({"name": o, "parameters": p})
            js = json.dumps({"inputs": ins, "outputs": outs}, separators=(",", ":")).encode()
            # padded with spaces (JSON whitespace) to a multiple of 8 bytes: the tensors that follow it in the body
            # are then aligned to their elements in the server's buffer, and netrun's backend reads them in place
            # instead of copying them (602 KB: 27 us of copy saved in the server)
            js += b" " * (-len(js) % 8)
            body = len(js) + sum(v.nbytes for k, v in inputs.items() if not (shm_inputs and k in shm_inputs))
            h = (f"POST /v2/models/{model}/infer HTTP/1.1\r\nHost: {self.host}\r\n"
                 f"Content-Type: application/octet-stream\r\nInference-Header-Content-Length: {len(js)}\r\n"
                 f"Content-Length: {body}\r\n\r\n").encode() + js
            self.heads[key] = h
        return h

    def infer(self, model, inputs, outputs, shm_inputs=None, shm_outputs=None):
        """inputs: {name: C-contiguous ndarray}; outputs: names to return. shm_inputs / shm_outputs: {name:
        (region, byte size, offset)} of registered shared-memory regions: those tensors travel there instead of in
        the body (an input's array then only gives its shape and type). Returns {name: ndarray} of the outputs
        received in the body (a copy: the receive buffer is reused)."""
        head = self._head(model, inputs, outputs, shm_inputs, shm_outputs)
        parts = [head] + [memoryview(np.ascontiguousarray(v)).cast("B") for k, v in inputs.items()
                          if not (shm_inputs and k in shm_inputs)]
        if self.sock is None:
            self._connect()
        try:
            self._send(parts)
            return self._receive(outputs)
        except KServeError as e:
            if e.status is None:
                self.close()  # a desynchronised connection is not reused
            raise
        except OSError:
            self.close()
            raise

    def _send(self, parts):
        total = sum(len(p) for p in parts)
        sent = self.sock.sendmsg(parts)
        while sent < total:  # a partial send (signal, full buffer): the rest
            skip = sent
            rest = []
            for p in parts:
                if skip >= len(p):
                    skip -= len(p)
                    continue
                rest.append(memoryview(p)[skip:])
                skip = 0
            parts, total = rest, total - sent
            sent = self.sock.sendmsg(parts)

    def _spin_first(self, view):
        """The first bytes of the response, polled for without sleeping (then back to a blocking socket)."""
        deadline = time.monotonic() + self.timeout
        self.sock.setblocking(False)
        try:
            while True:
                try:
                    got = self.sock.recv_into(view)
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise KServeError("no response within the timeout")
                    continue
                if got == 0:
                    raise KServeError("the server closed the connection")
                return got
        finally:
            self.sock.settimeout(self.timeout)

    def _receive(self, outputs):
        buf, n = self.buf, 0
        view = memoryview(buf)
        if self.spin:
            n = self._spin_first(view)
        while True:  # the status line and headers
            end = buf.find(b"\r\n\r\n", 0, n) if n else -1
            if end >= 0:
                break
            if n == len(buf):
                raise KServeError("response headers over 64 KiB")
            got = self.sock.recv_into(view[n:])
            if got == 0:
                raise KServeError("the server closed the connection")
            n += got
        head = bytes(buf[:end]).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        fields = {}
        for line in head[1:]:
            k, _, v = line.partition(":")
            fields[k.strip().lower()] = v.strip()
        if "content-length" not in fields:
            raise KServeError(f"response without Content-Length ({head[0]})")
        length = int(fields["content-length"])
        start = end + 4
        need = start + length
        if need > len(buf):  # grow the kept buffer once for this response size
            nb = bytearray(need)
            nb[:n] = buf[:n]
            self.buf = buf = nb
            view = memoryview(buf)
        while n < need:
            got = self.sock.recv_into(view[n:need])
            if got == 0:
                raise KServeError("the server closed the connection in a response")
            n += got
        if n > need:
            raise KServeError("more bytes than the response's Content-Length")
        jlen = int(fields.get("inference-header-content-length", length))
        info = json.loads(bytes(buf[start:start + jlen]))
        if status != 200:
            raise KServeError(f"[{status}] {info.get('error', info)}", status)
        res, off = {}, start + jlen
        for o in info.get("outputs", []):
            p = o.get("parameters", {})
            size = p.get("binary_data_size")
            if size is None:
                if "shared_memory_region" not in p and "data" in o:  # an output the server sent as JSON
                    res[o["name"]] = np.array(o["data"], _NP[o["datatype"]]).reshape(o["shape"])
                continue
            res[o["name"]] = np.frombuffer(buf, _NP[o["datatype"]], size // _NP[o["datatype"]].itemsize,
                                           off).reshape(o["shape"]).copy()
            off += size
        return {o: res[o] for o in outputs if o in res}

"""No leak over 10,000 runs: the process's resident memory is flat (copies and views alike)."""
import os

import numpy as np
import pytest

import netrun


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                    reason="under AddressSanitizer freed memory sits in quarantine, so RSS grows by design")
@pytest.mark.parametrize("copy", [True, False])
def test_rss_flat_over_10000_runs(add_model, copy):
    x = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
    with netrun.Session(add_model, backends="cpu", threads=1) as s:
        for _ in range(1000):  # warm up: allocators, caches
            s.run({"x": x}, copy=copy)
        before = rss_kib()
        for i in range(10_000):
            out = s.run({"x": x}, copy=copy)
            if i % 1000 == 0:
                s.run({"x": x.tolist()}, outputs=["z"])  # the other paths too: lists, selected outputs
        after = rss_kib()
        del out
    # 10,000 leaked output arrays of 64 bytes plus their numpy headers would be over 1 MiB
    assert after - before < 512, f"RSS grew by {after - before} KiB over 10,000 runs"


@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""), reason="RSS is not meaningful under ASan")
def test_rss_flat_over_sessions(add_model):
    """Sessions created and dropped: the C session is freed with the last reference."""
    x = np.zeros((1, 16), np.float32)
    m = netrun.Model(add_model)
    for _ in range(100):
        netrun.Session(m, backends="cpu", threads=1).run({"x": x})
    before = rss_kib()
    for _ in range(1000):
        s = netrun.Session(m, backends="cpu", threads=1)
        s.run({"x": x}, copy=False)
        del s
    after = rss_kib()
    assert after - before < 2048, f"RSS grew by {after - before} KiB over 1,000 sessions"

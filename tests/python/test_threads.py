"""Threads: sessions of one model on several threads run concurrently and each gets its own results; one
session shared by several threads is serialised by its lock (results still right, never a crash)."""
import threading

import numpy as np

import netrun

B = np.arange(1, 17, dtype=np.float32)


def hammer(s, seed, n, errors):
    rng = np.random.default_rng(seed)
    try:
        for _ in range(n):
            x = rng.standard_normal((1, 16)).astype(np.float32)
            out = s.run({"x": x})
            if not np.array_equal(out["y"], x + B) or not np.array_equal(out["z"], np.maximum(x + B, 0)):
                errors.append(f"thread {seed}: wrong result")
                return
    except Exception as e:  # noqa: BLE001 -- reported by the test
        errors.append(f"thread {seed}: {e!r}")


def run_threads(targets):
    ts = [threading.Thread(target=f, args=a) for f, a in targets]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts)


def test_one_session_per_thread(add_model):
    m = netrun.Model(add_model)
    sessions = [netrun.Session(m, backends="cpu", threads=1) for _ in range(4)]
    errors = []
    run_threads([(hammer, (s, i, 500, errors)) for i, s in enumerate(sessions)])
    assert errors == []
    assert all(s.stats.runs == 500 for s in sessions)


def test_shared_session_is_serialised(add_model):
    s = netrun.Session(add_model, backends="cpu", threads=1)
    errors = []
    run_threads([(hammer, (s, i, 300, errors)) for i in range(4)])
    assert errors == []
    assert s.stats.runs == 1200


def test_close_while_other_threads_run(add_model):
    """Closing a shared session from another thread: runs already inside finish, later ones get StateError."""
    s = netrun.Session(add_model, backends="cpu", threads=1)
    outcomes, stop = [], threading.Event()

    def runner():
        x = np.zeros((1, 16), np.float32)
        while not stop.is_set():
            try:
                s.run({"x": x})
            except netrun.StateError:
                outcomes.append("closed")
                return
            except Exception as e:  # noqa: BLE001
                outcomes.append(repr(e))
                return

    def closer():
        for _ in range(200):
            s.stats  # let the runners go a while
        s.close()
    run_threads([(runner, ()), (runner, ()), (closer, ())])
    stop.set()
    assert outcomes == ["closed", "closed"]

"""The model tests (tests/models/build_models.py: models, inputs and onnxruntime's outputs) through the Python
API: one Session per model, every case (a new batch re-prepares the same session), every output compared with
onnxruntime's within the CLI tests' tolerance."""
import glob
import os
import sys

import numpy as np
import pytest

import netrun

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
from run_model_tests import cases_of, compare  # noqa: E402

MODELS = os.environ.get("NETRUN_TEST_MODELS", "")
NAMES = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(MODELS, "*", "model.onnx"))) \
    if MODELS else []


def load_dir(d):
    return {os.path.basename(p)[:-4]: np.load(p) for p in sorted(glob.glob(os.path.join(d, "*.npy")))}


@pytest.mark.skipif(not NAMES, reason="NETRUN_TEST_MODELS is not a folder of built models (ctest sets it)")
@pytest.mark.parametrize("name", NAMES)
def test_model_matches_onnxruntime(name):
    d = os.path.join(MODELS, name)
    with netrun.Session(os.path.join(d, "model.onnx"), backends="cpu", threads=2) as s:
        for case, cd in cases_of(d):
            feeds = load_dir(os.path.join(cd, "inputs"))
            want = load_dir(os.path.join(cd, "expected"))
            out = s.run(feeds)
            assert set(out.names) == set(want), case
            for k, w in want.items():
                err, _ = compare(out[k], w, 1e-4, 1e-4)
                assert err is None, f"{name}/{case}/{k}: {err}"

"""Op cases: LSTM, GRU, RNN (compared with onnxruntime)."""
import numpy as np
import onnx

import optest
from optest import rand




GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
N_OUT = {"LSTM": 3, "GRU": 2, "RNN": 2}


def rnn_case(name, op, seq=5, batch=3, inp=4, hidden=6, direction="forward", layout=0, bias=True, lens=None,
             init_h=False, init_c=False, peep=False, outputs=None, opset=14, dtype=np.float32, const_w=True,
             seed=0, rtol=1e-4, atol=1e-5, **attrs):
    """One LSTM/GRU/RNN node. lens: list of sequence lengths (int32 input); outputs: names ('' = absent)."""
    nd = 2 if direction == "bidirectional" else 1
    G = GATES[op]
    s = seed * 10
    x = rand(*((batch, seq, inp) if layout else (seq, batch, inp)), dtype=dtype, seed=s + 1)
    w = rand(nd, G * hidden, inp, dtype=dtype, low=-0.6, high=0.6, seed=s + 2)
    r = rand(nd, G * hidden, hidden, dtype=dtype, low=-0.6, high=0.6, seed=s + 3)
    st_shape = (batch, nd, hidden) if layout else (nd, batch, hidden)
    wrap = (lambda a: ("const", a)) if const_w else (lambda a: a)
    inputs = [x, wrap(w), wrap(r),
              wrap(rand(nd, 2 * G * hidden, dtype=dtype, low=-0.5, high=0.5, seed=s + 4)) if bias else None,
              np.array(lens, np.int32) if lens is not None else None,
              rand(*st_shape, dtype=dtype, seed=s + 5) if init_h else None]
    if op == "LSTM":
        inputs += [rand(*st_shape, dtype=dtype, seed=s + 6) if init_c else None,
                   wrap(rand(nd, 3 * hidden, dtype=dtype, low=-0.5, high=0.5, seed=s + 7)) if peep else None]
    while inputs[-1] is None:
        inputs.pop()
    attrs = dict(attrs, hidden_size=hidden, direction=direction)
    if attrs.pop("no_hidden_size", False):  # netrun then takes it from R's shape
        del attrs["hidden_size"]
    if layout:
        attrs["layout"] = layout
    outs = outputs or ["Y", "Y_h", "Y_c"][:N_OUT[op]]
    c = optest.node_case(name, op, inputs, outputs=len(outs), output_names=outs, attrs=attrs, opset=opset,
                         rtol=rtol, atol=atol)
    return c


CASES = []
for op in ["LSTM", "GRU", "RNN"]:
    CASES.append(rnn_case(f"{op}_fwd", op))
    CASES.append(rnn_case(f"{op}_rev", op, direction="reverse", seed=1))
    CASES.append(rnn_case(f"{op}_bidi", op, direction="bidirectional", seed=2))
    CASES.append(rnn_case(f"{op}_nobias", op, bias=False, seed=3))
    CASES.append(rnn_case(f"{op}_init", op, init_h=True, init_c=True, seed=4))
    CASES.append(rnn_case(f"{op}_lens", op, lens=[5, 2, 4], init_h=True, seed=5))
    CASES.append(rnn_case(f"{op}_lens_rev", op, direction="reverse", lens=[3, 5, 1], seed=6))
    CASES.append(rnn_case(f"{op}_lens_bidi", op, direction="bidirectional", lens=[4, 1, 5], init_h=True,
                          init_c=True, seed=7))
    CASES.append(rnn_case(f"{op}_clip", op, clip=0.4, direction="bidirectional", seed=8))
    CASES.append(rnn_case(f"{op}_batch1_seq1", op, seq=1, batch=1, seed=9))
    CASES.append(rnn_case(f"{op}_big", op, seq=12, batch=8, inp=33, hidden=40, direction="bidirectional",
                          seed=10, rtol=1e-3, atol=1e-4))
    CASES.append(rnn_case(f"{op}_weights_runtime", op, const_w=False, direction="bidirectional", seed=11))
    CASES.append(rnn_case(f"{op}_only_Yh", op, outputs=["", "Y_h"], seed=12))
    CASES.append(rnn_case(f"{op}_only_Y", op, outputs=["Y"], seed=13))
    CASES.append(rnn_case(f"{op}_opset7", op, opset=7, direction="bidirectional", seed=14))
    CASES.append(rnn_case(f"{op}_f16", op, dtype=np.float16, init_h=True, seed=15, rtol=1e-2, atol=1e-2))

# one direction with steps large enough to split the batch over threads
CASES.append(rnn_case("LSTM_split_steps", "LSTM", seq=4, batch=16, inp=20, hidden=128, init_h=True, init_c=True,
                      lens=[4, 3, 2, 1] * 4, peep=True, seed=33, rtol=1e-3, atol=1e-4))
CASES.append(rnn_case("GRU_split_steps", "GRU", seq=4, batch=16, inp=20, hidden=150, direction="reverse",
                      lens=[1, 2, 3, 4] * 4, seed=34, rtol=1e-3, atol=1e-4))
CASES.append(rnn_case("GRU_lbr_split_steps", "GRU", seq=3, batch=16, inp=20, hidden=150, linear_before_reset=1,
                      seed=35, rtol=1e-3, atol=1e-4))
CASES.append(rnn_case("RNN_split_steps", "RNN", seq=4, batch=32, inp=10, hidden=200, init_h=True, seed=36,
                      rtol=1e-3, atol=1e-4))

# activations with alpha/beta
CASES.append(rnn_case("LSTM_acts", "LSTM", activations=["HardSigmoid", "Tanh", "Softsign"],
                      activation_alpha=[0.3], activation_beta=[0.4], seed=20))
CASES.append(rnn_case("LSTM_acts_bidi", "LSTM", direction="bidirectional",
                      activations=["Sigmoid", "LeakyRelu", "ScaledTanh", "HardSigmoid", "Elu", "Softplus"],
                      activation_alpha=[0.05, 0.9, 0.25, 0.7], activation_beta=[1.2, 0.45], seed=21))
CASES.append(rnn_case("LSTM_peep", "LSTM", peep=True, init_h=True, init_c=True, seed=22))
CASES.append(rnn_case("LSTM_peep_bidi_lens", "LSTM", peep=True, direction="bidirectional", lens=[2, 5, 3],
                      seed=23))
CASES.append(rnn_case("LSTM_input_forget", "LSTM", input_forget=1, peep=True, seed=24))
CASES.append(rnn_case("GRU_lbr", "GRU", linear_before_reset=1, seed=25))
CASES.append(rnn_case("GRU_lbr_bidi_lens", "GRU", linear_before_reset=1, direction="bidirectional",
                      lens=[5, 3, 2], init_h=True, seed=26))
CASES.append(rnn_case("GRU_acts", "GRU", activations=["HardSigmoid", "Affine"], activation_alpha=[0.25, 0.8],
                      activation_beta=[0.5, 0.1], seed=27))
CASES.append(rnn_case("GRU_acts_bidi", "GRU", direction="bidirectional",
                      activations=["Sigmoid", "ThresholdedRelu", "Sigmoid", "Relu"], activation_alpha=[0.1],
                      seed=28))
CASES.append(rnn_case("RNN_relu", "RNN", activations=["Relu"], seed=29))
CASES.append(rnn_case("RNN_bidi_acts", "RNN", direction="bidirectional", activations=["Sigmoid", "Softsign"],
                      seed=30))
CASES.append(rnn_case("GRU_opset7_lbr", "GRU", opset=7, linear_before_reset=1, seed=31))


# ---- layout = 1 (batch first, opset 14) ----
# onnxruntime's CPU kernels reject layout=1, so these cannot be CASES (the runner gives both engines the same
# model). Run them with `python3 cases_rnn.py --netrun PATH`: netrun runs the layout-1 model and onnxruntime
# the same node with layout 0 on transposed inputs; its outputs are transposed back before comparing.
LAYOUT1 = [rnn_case(f"{op}_layout1_{tag}", op, layout=1, seed=40 + i, **kw)
           for op in ["LSTM", "GRU", "RNN"]
           for i, (tag, kw) in enumerate([
               ("fwd", {}),
               ("init", dict(init_h=True, init_c=True)),
               ("bidi_lens", dict(direction="bidirectional", lens=[5, 2, 3], init_h=True, init_c=True)),
               ("rev_lens", dict(direction="reverse", lens=[1, 4, 5], init_h=True)),
           ])]


def layout0_twin(case):
    """The same node with layout 0: model, feeds, and a function mapping its outputs to layout 1."""
    m = onnx.ModelProto()
    m.CopyFrom(case.model)
    node = m.graph.node[0]
    for a in node.attribute:
        if a.name == "layout":
            a.i = 0
    feeds = dict(case.inputs)
    for gi in m.graph.input:
        if gi.name in ("in0", "in5", "in6"):  # X, initial_h, initial_c: swap the first two dims
            dims = gi.type.tensor_type.shape.dim
            d0, d1 = dims[0].dim_value, dims[1].dim_value
            dims[0].dim_value, dims[1].dim_value = d1, d0
            feeds[gi.name] = np.ascontiguousarray(np.swapaxes(case.inputs[gi.name], 0, 1))

    def back(name, arr):
        return np.transpose(arr, (2, 0, 1, 3)) if arr.ndim == 4 else np.swapaxes(arr, 0, 1)
    return m, feeds, back


def run_layout1(netrun):
    import os
    import subprocess
    import tempfile
    import onnxruntime as ort
    from run_op_tests import compare
    failed = 0
    work = tempfile.mkdtemp(prefix="netrun-rnn-layout1-")
    for case in LAYOUT1:
        d = os.path.join(work, case.name)
        os.makedirs(d)
        onnx.save(case.model, os.path.join(d, "model.onnx"))
        m0, feeds0, back = layout0_twin(case)
        sess = ort.InferenceSession(m0.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        want = {n: back(n, v) for n, v in zip(names, sess.run(None, feeds0))}
        cmd = [netrun, os.path.join(d, "model.onnx"), "--backend", "cpu", "--warmup", "0", "--iterations", "1",
               "--quiet", "--output-dir", os.path.join(d, "out")]
        for nm, arr in case.inputs.items():
            np.save(os.path.join(d, f"{nm}.npy"), arr)
            cmd += ["--input", f"{nm}={os.path.join(d, nm + '.npy')}"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        msg = f"netrun exit {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}" if r.returncode else None
        for n in names:
            if msg:
                break
            msg = compare(n, np.load(os.path.join(d, "out", f"{n}.npy")), want[n], case.rtol, case.atol)
        failed += bool(msg)
        print(f"FAIL rnn.{case.name}: {msg}" if msg else f"ok   rnn.{case.name}")
    print(f"{len(LAYOUT1) - failed} passed, {failed} failed")
    return failed


if __name__ == "__main__":
    import argparse
    import sys
    ap = argparse.ArgumentParser(description="layout=1 RNN cases (see LAYOUT1)")
    ap.add_argument("--netrun", required=True)
    sys.exit(1 if run_layout1(ap.parse_args().netrun) else 0)

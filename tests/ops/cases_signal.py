"""Op cases: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix (compared with onnxruntime)."""
import numpy as np

import optest
from optest import rand

CASES = []


def case(name, op, inputs, **kw):
    CASES.append(optest.node_case(name, op, inputs, **kw))


I64 = lambda v: np.array(v, dtype=np.int64)

# DFT opset 17 (axis attribute): real and complex input, power-of-two (FFT) and odd (direct) lengths
for n, tag in [(16, "pow2"), (12, "even"), (9, "odd")]:
    xr = rand(2, n, 3, 1, seed=n)
    xc = rand(2, n, 3, 2, seed=n + 1)
    case(f"dft17_real_{tag}", "DFT", [xr], attrs={"axis": 1}, opset=17, atol=1e-4)
    case(f"dft17_complex_{tag}", "DFT", [xc], attrs={"axis": 1}, opset=17, atol=1e-4)
    case(f"dft17_inverse_{tag}", "DFT", [xc], attrs={"axis": 1, "inverse": 1}, opset=17, atol=1e-5)
    case(f"dft17_rfft_{tag}", "DFT", [xr], attrs={"axis": 1, "onesided": 1}, opset=17, atol=1e-4)
# axis 2 of 4-D, dft_length padding and truncation (constant input)
x = rand(2, 3, 10, 1, seed=20)
case("dft17_axis2", "DFT", [x], attrs={"axis": 2}, opset=17, atol=1e-4)
case("dft17_pad", "DFT", [x, ("const", I64(16))], attrs={"axis": 2}, opset=17, atol=1e-4)
case("dft17_trunc", "DFT", [x, ("const", I64(7))], attrs={"axis": 2}, opset=17, atol=1e-4)
# irfft: one-sided spectrum in, real signal out (even and odd lengths)
spec = np.fft.rfft(rand(3, 8, seed=21).astype(np.float64), axis=1)
xs = np.stack([spec.real, spec.imag], -1).astype(np.float32)[:, :, None, :]  # [3, 5, 1, 2]
case("dft17_irfft", "DFT", [xs], attrs={"axis": 1, "inverse": 1, "onesided": 1}, opset=17, atol=1e-5)
case("dft17_irfft_len9", "DFT", [xs, ("const", I64(9))], attrs={"axis": 1, "inverse": 1, "onesided": 1},
     opset=17, atol=1e-5)
# opset 20: axis as an input (graph input: resolved at run time), negative axis, double
x20 = rand(2, 6, 8, 2, seed=22)
case("dft20_axis_input", "DFT", [x20, None, I64(1)], opset=20, atol=1e-4)
case("dft20_default_axis", "DFT", [x20], opset=20, atol=1e-4)
case("dft20_neg_axis", "DFT", [x20, None, I64(-3)], opset=20, atol=1e-4)
case("dft20_len_input", "DFT", [x20, I64(5), I64(2)], attrs={"inverse": 1}, opset=20, atol=1e-5)
case("dft20_f64", "DFT", [rand(3, 12, 1, dtype=np.float64, seed=23), None, ("const", I64(1))],
     attrs={"onesided": 1}, opset=20, rtol=1e-9, atol=1e-10)

# STFT: rectangular frames, a window, complex signal, two-sided, frame_length input
sig = rand(2, 64, 1, seed=30)
case("stft_frame_length", "STFT", [sig, I64(8), None, I64(16)], opset=17, atol=1e-4)
win = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)).astype(np.float32)
case("stft_window", "STFT", [sig, I64(5), win], opset=17, atol=1e-4)
case("stft_twosided", "STFT", [sig, I64(8), win], attrs={"onesided": 0}, opset=17, atol=1e-4)
case("stft_odd_frame", "STFT", [sig, I64(7), None, ("const", I64(15))], opset=17, atol=1e-4)
case("stft_complex", "STFT", [rand(1, 40, 2, seed=31), I64(4), None, I64(8)], attrs={"onesided": 0}, opset=17,
     atol=1e-4)

# windows: periodic and symmetric, int32/int64 size, other output types
for op in ["HannWindow", "HammingWindow", "BlackmanWindow"]:
    case(f"{op}_periodic", op, [np.array(10, dtype=np.int32)], opset=17, atol=1e-6)
    case(f"{op}_symmetric", op, [np.array(11, dtype=np.int64)], attrs={"periodic": 0}, opset=17, atol=1e-6)
    # onnxruntime computes the weights in float before casting to double: float-level tolerance
    case(f"{op}_f64", op, [np.array(33, dtype=np.int64)], attrs={"output_datatype": 11}, opset=17, atol=1e-7)
    case(f"{op}_const_size", op, [("const", np.array(7, dtype=np.int64))], opset=17, atol=1e-6)

# MelWeightMatrix
case("mel_basic", "MelWeightMatrix", [np.array(8, np.int32), np.array(16, np.int32), np.array(8192, np.int32),
                                      np.array(0, np.float32), np.array(4096, np.float32)], opset=17)
case("mel_wide", "MelWeightMatrix", [np.array(20, np.int64), np.array(512, np.int64), np.array(16000, np.int64),
                                     np.array(125, np.float32), np.array(7600, np.float32)], opset=17)

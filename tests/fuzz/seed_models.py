"""Importer seeds that reach what the ONNX node tests do not: onnxruntime's contrib ops (the contrib plugin's op
definitions and kernels) and quantized models (the QDQ pass, QLinearConv / QLinearMatMul / ConvInteger /
MatMulInteger on the CPU's int8 kernels). Deterministic (fixed seeds, no downloads); used by run_fuzzer.py.

extra_importer_seeds(dir) writes them and returns how many; a missing onnxruntime skips the quantized ones."""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_BYTES = 65536  # run_fuzzer.py's -max_len: a longer seed is cut, and its cut tail would only fail to parse


def _save(out, name, model):
    data = model.SerializeToString()
    if len(data) > MAX_BYTES:
        return 0
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(data)
    return 1


def contrib_seeds(out):
    """One-node com.microsoft models of the contrib tests (Gelu family, Skip/LayerNormalization, FusedMatMul,
    Attention with each mask form), float32 and float16."""
    sys.path.insert(0, os.path.join(HERE, "..", "contrib"))
    import cases_contrib
    return sum(_save(out, "contrib_" + c.name, c.model) for c in cases_contrib.CASES)


def quantized_seeds(out):
    """Small float models of tests/cpu/test_int8_qdq.py, quantized by onnxruntime: static QDQ (per tensor and per
    channel, uint8 and int8 activations), static QOperator (QLinearConv / QLinearMatMul nodes), dynamic
    (ConvInteger, MatMulInteger, DynamicQuantizeLinear), and the hand-written QDQ Convs around what must not fuse."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static
    sys.path.insert(0, os.path.join(HERE, "..", "cpu"))
    import test_int8_qdq as q
    n = 0
    models = [("conv3x3", q.one_conv(3, 1, 1, 4, 8, 6)), ("conv_dw_s2", q.one_conv(3, 2, 8, 8, 8, 7)),
              ("conv1x1", q.one_conv(1, 1, 1, 8, 4, 5)), ("matmul", q.one_matmul()), ("convnet", q.convnet()),
              ("bert_block", q.bert_block())]
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx")
        for name, (m, shape) in models:
            onnx.save(m, src)
            for fmt, per_channel, act, weight in [
                    (QuantFormat.QDQ, False, QuantType.QUInt8, QuantType.QInt8),
                    (QuantFormat.QDQ, True, QuantType.QInt8, QuantType.QInt8),
                    (QuantFormat.QDQ, False, QuantType.QUInt8, QuantType.QUInt8),
                    (QuantFormat.QOperator, True, QuantType.QUInt8, QuantType.QInt8)]:
                tag = f"{'qdq' if fmt == QuantFormat.QDQ else 'qop'}_{'pc' if per_channel else 'pt'}_" \
                      f"{'u8' if act == QuantType.QUInt8 else 's8'}{'u8' if weight == QuantType.QUInt8 else 's8'}"
                quantize_static(src, dst, q.Reader(shape, 2), quant_format=fmt, per_channel=per_channel,
                                activation_type=act, weight_type=weight)
                n += _save(out, f"int8_{name}_{tag}", onnx.load(dst))
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8,
                             op_types_to_quantize=["Conv"] if "conv" in name else ["MatMul"])
            n += _save(out, f"int8_{name}_dynamic", onnx.load(dst))
    for kind in ("relu_mid", "shared", "dyn_w", "bias_scale", "fused", "relu_low"):
        n += _save(out, f"int8_hand_{kind}", q.hand_qdq(kind))
    return n


def extra_importer_seeds(out):
    n = contrib_seeds(out)
    try:
        import onnxruntime.quantization  # noqa: F401
    except ImportError:
        return n
    return n + quantized_seeds(out)


if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    print(extra_importer_seeds(sys.argv[1]), "seeds written to", sys.argv[1])

/* Names of the ONNX operators (ai.onnx, ai.onnx.ml, ai.onnx.preview.training) as of onnx 1.23, used only to
 * name the op a node test exercises from its folder name (test_reduce_sum_keepdims -> ReduceSum). */
#include "conformance.h"

const char *const conf_onnx_op_names[] = {
    "Abs", "Acos", "Acosh", "Adagrad", "Adam", "Add", "AffineGrid", "And", "ArgMax", "ArgMin",
    "ArrayFeatureExtractor", "Asin", "Asinh", "Atan", "Atanh", "Attention", "AveragePool",
    "BatchNormalization", "Bernoulli", "Binarizer", "BitCast", "BitShift", "BitwiseAnd", "BitwiseNot",
    "BitwiseOr", "BitwiseXor", "BlackmanWindow", "Cast", "CastLike", "CastMap", "CategoryMapper",
    "CausalConvWithState", "Ceil", "Celu", "CenterCropPad", "Clip", "Col2Im", "Compress", "Concat",
    "ConcatFromSequence", "Constant", "ConstantOfShape", "Conv", "ConvInteger", "ConvTranspose", "Cos",
    "Cosh", "CumProd", "CumSum", "DFT", "DeformConv", "DepthToSpace", "DequantizeLinear", "Det",
    "DictVectorizer", "Div", "Dropout", "DynamicQuantizeLinear", "Einsum", "Elu", "Equal", "Erf", "Exp",
    "Expand", "EyeLike", "FeatureVectorizer", "Flatten", "FlexAttention", "Floor", "GRU", "Gather",
    "GatherElements", "GatherND", "Gelu", "Gemm", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool",
    "Gradient", "Greater", "GreaterOrEqual", "GridSample", "GroupNormalization", "HammingWindow",
    "HannWindow", "HardSigmoid", "HardSwish", "Hardmax", "Identity", "If", "ImageDecoder", "Imputer",
    "InstanceNormalization", "IsInf", "IsNaN", "LRN", "LSTM", "LabelEncoder", "LayerNormalization",
    "LeakyRelu", "Less", "LessOrEqual", "LinearAttention", "LinearClassifier", "LinearRegressor", "Log",
    "LogSoftmax", "Loop", "LpNormalization", "LpPool", "MatMul", "MatMulInteger", "Max", "MaxPool",
    "MaxRoiPool", "MaxUnpool", "Mean", "MeanVarianceNormalization", "MelWeightMatrix", "Min", "Mish", "Mod",
    "Momentum", "Mul", "Multinomial", "Neg", "NegativeLogLikelihoodLoss", "NonMaxSuppression", "NonZero",
    "Normalizer", "Not", "OneHot", "OneHotEncoder", "Optional", "OptionalGetElement", "OptionalHasElement",
    "Or", "PRelu", "Pad", "Pow", "QLinearConv", "QLinearMatMul", "QuantizeLinear", "RMSNormalization", "RNN",
    "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Range", "Reciprocal",
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceProd", "ReduceSum", "ReduceSumSquare", "RegexFullMatch", "Relu", "Reshape", "Resize",
    "ReverseSequence", "RoiAlign", "RotaryEmbedding", "Round", "STFT", "SVMClassifier", "SVMRegressor",
    "Scaler", "Scan", "Scatter", "ScatterElements", "ScatterND", "Selu", "SequenceAt", "SequenceConstruct",
    "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength", "SequenceMap", "Shape", "Shrink",
    "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Slice", "Softmax", "SoftmaxCrossEntropyLoss", "Softplus",
    "Softsign", "SpaceToDepth", "Split", "SplitToSequence", "Sqrt", "Squeeze", "StringConcat",
    "StringNormalizer", "StringSplit", "Sub", "Sum", "SwiGLU", "Swish", "Tan", "Tanh", "TensorScatter",
    "TfIdfVectorizer", "ThresholdedRelu", "Tile", "TopK", "Transpose", "TreeEnsemble",
    "TreeEnsembleClassifier", "TreeEnsembleRegressor", "Trilu", "Unique", "Unsqueeze", "Upsample", "Where",
    "Xor", "ZipMap",
};
const int conf_onnx_op_count = (int)(sizeof(conf_onnx_op_names) / sizeof(conf_onnx_op_names[0]));

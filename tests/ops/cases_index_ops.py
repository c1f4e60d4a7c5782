"""Op cases: NonZero, Unique, OneHot, Compress, ReverseSequence, TensorScatter, LRN (compared with onnxruntime)."""
import numpy as np

import optest
from optest import rand

CASES = []


def case(name, op, inputs, **kw):
    CASES.append(optest.node_case(name, op, inputs, **kw))


# NonZero: data-dependent output size; -0.0 is zero, NaN is not; all-zero input gives [rank, 0]
xf = rand(3, 4, 5, seed=1)
xf[xf < 0.3] = 0
xf[0, 0, 0] = -0.0
xf[1, 1, 1] = np.nan
case("nonzero_f32", "NonZero", [xf], opset=13)
case("nonzero_i32", "NonZero", [rand(6, 7, dtype=np.int32, low=-1, high=1, seed=2)], opset=13)
case("nonzero_bool", "NonZero", [rand(4, 3, 2, dtype=np.bool_, seed=3)], opset=13)
case("nonzero_none", "NonZero", [np.zeros((3, 2), np.float32)], opset=13)
case("nonzero_1d_i64", "NonZero", [np.array([0, 5, 0, -3, 7], np.int64)], opset=13)
# long masks (a detector's score > threshold): rank 1 and 3, bool, uint8, float with -0.0
mask = rand(24000, seed=5) > 0.5
case("nonzero_mask_1d", "NonZero", [mask], opset=13)
case("nonzero_u8_3d", "NonZero", [(rand(5, 60, 70, seed=6) > 0.7).astype(np.uint8)], opset=13)
xl = rand(4000, 3, seed=7)
xl[xl < 0.4] = -0.0
case("nonzero_f32_long", "NonZero", [xl], opset=13)

# Unique: sorted/unsorted, flat and along an axis, all four outputs
xi = rand(20, dtype=np.int64, low=-4, high=4, seed=4)
for srt in [0, 1]:
    case(f"unique_flat_s{srt}", "Unique", [xi], outputs=4, attrs={"sorted": srt}, opset=11)
    case(f"unique_f32_2d_s{srt}", "Unique", [rand(4, 5, dtype=np.int32, low=0, high=5, seed=5).astype(np.float32)],
         outputs=4, attrs={"sorted": srt}, opset=11)
rows = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [0, 9, 9], [2, 3, 4]], np.float32)
for ax in [0, 1, -2]:
    case(f"unique_axis{ax}".replace("-", "m"), "Unique", [rows], outputs=4, attrs={"axis": ax, "sorted": 1}, opset=11)
x3 = rand(2, 6, 2, dtype=np.int64, low=0, high=1, seed=6)  # onnxruntime: no int32 Unique
case("unique_axis1_3d", "Unique", [x3], outputs=4, attrs={"axis": 1}, opset=11)
case("unique_y_only", "Unique", [rand(30, dtype=np.int8, low=0, high=9, seed=7)], outputs=1, opset=11)

# OneHot: axis variants, negative and out-of-range indices, float indices, int values
ind = np.array([[1, 9, -2], [0, 12, -11]], np.int64)
vals = np.array([0, 5], np.float32)
for ax in [-1, 0, 1, 2, -3]:
    case(f"onehot_axis{ax}".replace("-", "m"), "OneHot", [ind, ("const", np.array(10, np.int64)), vals],
         attrs={"axis": ax}, opset=11)
case("onehot_float_ind", "OneHot", [np.array([1.7, 3.0, 0.0, -1.5, -1.0, 2.0], np.float32), ("const", np.array(5.0, np.float32)),
                                    np.array([2, 7], np.float32)], opset=11)
case("onehot_depth_input", "OneHot", [np.array([0, 2, 3], np.int64), np.array([4], np.int64), vals], opset=11)

# Compress: along each axis, flattened, shorter condition, none selected
xc = rand(3, 4, 5, seed=8)
case("compress_axis0", "Compress", [xc, np.array([True, False, True])], attrs={"axis": 0}, opset=11)
case("compress_axis1_short", "Compress", [xc, np.array([False, True, True])], attrs={"axis": 1}, opset=11)
case("compress_axism1", "Compress", [xc, rand(5, dtype=np.bool_, seed=9)], attrs={"axis": -1}, opset=11)
case("compress_flat", "Compress", [xc, rand(60, dtype=np.bool_, seed=10)], opset=11)
case("compress_none", "Compress", [xc, np.zeros(3, bool)], attrs={"axis": 0}, opset=11)
case("compress_i64", "Compress", [rand(4, 3, dtype=np.int64, low=-9, high=9, seed=11), np.array([1, 0, 1], bool)],
     attrs={"axis": 1}, opset=11)

# ReverseSequence: time-major and batch-major, inner dims, lengths 0..T
xs = rand(5, 4, 3, seed=12)
case("revseq_time", "ReverseSequence", [xs, np.array([5, 0, 3, 1], np.int64)], attrs={"time_axis": 0, "batch_axis": 1},
     opset=10)
xb = rand(4, 5, 2, 2, seed=13)
case("revseq_batch", "ReverseSequence", [xb, np.array([1, 2, 5, 4], np.int64)], attrs={"time_axis": 1, "batch_axis": 0},
     opset=10)

# TensorScatter: linear and circular (wrapping), default write indices, another axis
past = rand(2, 3, 6, 4, seed=14)
upd = rand(2, 3, 2, 4, seed=15)
case("tscatter_linear", "TensorScatter", [past, upd, np.array([1, 4], np.int64)], opset=24)
case("tscatter_circular", "TensorScatter", [past, upd, np.array([5, 2], np.int64)], attrs={"mode": "circular"},
     opset=24)
case("tscatter_no_indices", "TensorScatter", [past, upd], opset=24)
case("tscatter_axis1", "TensorScatter", [rand(2, 7, 3, seed=16), rand(2, 3, 3, seed=17), np.array([0, 4], np.int64)],
     attrs={"axis": 1}, opset=24)

# LRN (hosted here for now)
case("lrn_size3", "LRN", [rand(2, 6, 4, 4, seed=18)], attrs={"size": 3, "alpha": 1e-2, "beta": 0.6, "bias": 2.0},
     opset=13)
case("lrn_size5", "LRN", [rand(1, 7, 5, 3, seed=19)], attrs={"size": 5}, opset=13)  # onnxruntime takes odd sizes only

# TfIdfVectorizer (integer tokens): skips, uni+bigrams, IDF/TFIDF weights, batch rows
tf_attrs = dict(ngram_counts=[0, 4], ngram_indexes=[0, 1, 2, 3, 4, 5, 6], pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])
toks = rand(3, 9, dtype=np.int64, low=2, high=8, seed=20)
case("tfidf_tf_bigrams_skip0", "TfIdfVectorizer", [toks], attrs=dict(tf_attrs, mode="TF", min_gram_length=2,
                                                                       max_gram_length=2, max_skip_count=0), opset=9)
case("tfidf_tf_uni_bi_skip3", "TfIdfVectorizer", [toks.astype(np.int32)],
     attrs=dict(tf_attrs, mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=3), opset=9)
case("tfidf_idf_weights", "TfIdfVectorizer", [toks[0]], attrs=dict(tf_attrs, mode="IDF", min_gram_length=1,
     max_gram_length=2, max_skip_count=2, weights=[0.5, 1, 2, 3, 4, 5, 6]), opset=9)
case("tfidf_tfidf_weights", "TfIdfVectorizer", [toks], attrs=dict(tf_attrs, mode="TFIDF", min_gram_length=1,
     max_gram_length=2, max_skip_count=1, weights=[0.5, 1, 2, 3, 4, 5, 6]), opset=9)

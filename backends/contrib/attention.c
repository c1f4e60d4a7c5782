/* com.microsoft.Attention on host memory (BERT-style self-attention, no past state): QKV = input x weights + bias
 * by OpenBLAS, then per batch and head softmax(scale Q K^T + mask) V in float (the products by OpenBLAS too). Masks: key lengths (B), end and start
 * positions (2B), raw masks (B, T) and (B, S, T) (0 = masked: mask_filter_value is added), and unidirectional
 * (causal, added on top), as onnxruntime's CPU kernel applies them. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "contrib.h"

static netrun_status grow(float **scratch, size_t *scratch_n, size_t need) {
    if (need <= *scratch_n) return NETRUN_OK;
    float *s = nrc_host->alloc(need * sizeof(float), 64);
    if (!s) return nrc_host->error(NETRUN_ERR_OUT_OF_MEMORY, NRC_NAME ": Attention: out of memory (%zu floats)", need);
    nrc_host->free(*scratch);
    *scratch = s, *scratch_n = need;
    return NETRUN_OK;
}

netrun_status nrc_run_attention(const nrc_attention_params *p, const netrun_kernel_args *a, float **scratch,
                                size_t *scratch_n) {
    const netrun_tensor *x = &a->inputs[0], *w = &a->inputs[1];
    const netrun_tensor *bias = a->n_inputs > 2 && a->inputs[2].rank >= 0 ? &a->inputs[2] : NULL;
    const netrun_tensor *mask = a->n_inputs > 3 && a->inputs[3].rank >= 0 ? &a->inputs[3] : NULL;
    netrun_tensor *y = &a->outputs[0];
    int f16 = x->dtype == NETRUN_DTYPE_FLOAT16;
    int64_t B = x->dims[0], S = x->dims[1], hin = x->dims[2], wt = w->dims[1], N = p->num_heads;
    int64_t hq = p->q_hidden, hv = p->v_hidden, dq = hq / N, dv = hv / N, T = S;
    if (!B || !S) return NETRUN_OK;
    size_t rows = (size_t)(B * S), conv = f16 ? rows * (size_t)hin + (size_t)(hin * wt) : 0;
    netrun_status st = grow(scratch, scratch_n, conv + rows * (size_t)wt + (size_t)(S * T + S * hv));
    if (st != NETRUN_OK) return st;
    float *xf = f16 ? *scratch : x->data, *wf = f16 ? *scratch + rows * (size_t)hin : w->data;
    float *qkv = *scratch + conv, *prob = qkv + rows * (size_t)wt;
    if (f16) {
        for (size_t i = 0; i < rows * (size_t)hin; i++) xf[i] = nrc_load(x->data, 1, i);
        for (size_t i = 0; i < (size_t)(hin * wt); i++) wf[i] = nrc_load(w->data, 1, i);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)wt, (int)hin, 1.0f, xf, (int)hin, wf,
                (int)wt, 0.0f, qkv, (int)wt);
    if (bias)
        for (size_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < wt; j++) qkv[r * (size_t)wt + (size_t)j] += nrc_load(bias->data, f16, (size_t)j);
    float scale = p->scale != 0.0f ? p->scale : 1.0f / sqrtf((float)dq);
    const int32_t *m = mask ? mask->data : NULL;
    int mrank = mask ? mask->rank : 0;
    int64_t mlen = mask ? mask->dims[0] : 0;
    int mask_ok = !mask || (mrank == 1 && (mlen == B || mlen == 2 * B)) ||
                  (mrank == 2 && mlen == B && mask->dims[1] == T) ||
                  (mrank == 3 && mlen == B && mask->dims[1] == S && mask->dims[2] == T);
    if (!mask_ok)
        return nrc_host->error(NETRUN_ERR_UNSUPPORTED, NRC_NAME ": Attention: mask_index of rank %d (first dim %lld) "
                               "is none of (B), (2B), (B, T), (B, S, T) for B %lld, S %lld", mrank, (long long)mlen,
                               (long long)B, (long long)S);
    float *ctx = prob + S * T; /* float16 output: one head's context before conversion */
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++) {
            /* the head's Q, K and V are column blocks of the QKV rows: strided matrices for OpenBLAS */
            const float *q = qkv + (size_t)(b * S * wt + n * dq), *k = q + hq, *v = qkv + (size_t)(b * S * wt + 2 * hq + n * dv);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)S, (int)T, (int)dq, scale, q, (int)wt, k, (int)wt,
                        0.0f, prob, (int)T);
            for (int64_t s = 0; s < S; s++) {
                float *row = prob + s * T, mx = -INFINITY;
                for (int64_t t = 0; t < T; t++) {
                    float add = 0.0f;
                    if (mrank == 1 && mlen == B) add = t < m[b] ? 0.0f : p->mask_filter_value;
                    else if (mrank == 1) add = t < m[b] && t >= m[B + b] ? 0.0f : p->mask_filter_value;
                    else if (mrank == 2) add = m[b * T + t] > 0 ? 0.0f : p->mask_filter_value;
                    else if (mrank == 3) add = m[(b * S + s) * T + t] > 0 ? 0.0f : p->mask_filter_value;
                    if (p->unidirectional && t > s) add += p->mask_filter_value;
                    row[t] += add;
                    if (row[t] > mx) mx = row[t];
                }
                float sum = 0.0f;
                for (int64_t t = 0; t < T; t++) sum += row[t] = expf(row[t] - mx);
                for (int64_t t = 0; t < T; t++) row[t] /= sum;
            }
            float *out = f16 ? ctx : (float *)y->data + (size_t)(b * S * hv + n * dv);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)S, (int)dv, (int)T, 1.0f, prob, (int)T, v, (int)wt,
                        0.0f, out, f16 ? (int)dv : (int)hv);
            if (f16)
                for (int64_t s = 0; s < S; s++)
                    for (int64_t d = 0; d < dv; d++)
                        nrc_store(y->data, 1, (size_t)((b * S + s) * hv + n * dv + d), ctx[s * dv + d]);
        }
    return NETRUN_OK;
}

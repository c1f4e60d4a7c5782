/* CUDA kernels: Attention (opset 23/24), RotaryEmbedding, LinearAttention and CausalConvWithState, float32 and
 * float16 computed in float, after the CPU kernels in backends/cpu/transformer.c.
 * Attention: one block per (query row, q head, batch); the block keeps the scaled query row and the row of
 * scores in shared memory: scores (one thread per key), softmax (block max / sum), then the weighted sum of V
 * (one thread per output column). Straightforward rather than fast: no tiling over keys. */
#include "nlp_common.cuh"

/* ================================ Attention ================================ */

struct attn_args {
    const void *q, *k, *v, *mask, *pk, *pv;
    const int64_t *nonpad;
    void *y, *qk;
    int qt, kt, vt, mt, yt, qkt;        /* dtypes */
    int mask_kind, is_causal, mode, has_nonpad;
    float sq, softcap;                  /* sqrt(scale) applied to Q and K, as the reference does */
    int64_t Hq, group, Hk, Lq, Lk, Lp, Lt, E, Ev;
    int64_t qs[3], ks[3], vs[3], ys[3]; /* element strides (batch, head, seq) */
    int64_t ms[4], mlast;               /* mask strides over [B, Hq, Lq, Lm], Lm */
};

__global__ void attn_k(attn_args a) {
    extern __shared__ float smem[];
    __shared__ float red[32];
    float *qr = smem, *sc = smem + a.E;
    const int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z, hk = h / a.group;
    const int64_t qbase = b * a.qs[0] + h * a.qs[1] + i * a.qs[2];
    for (int64_t e = threadIdx.x; e < a.E; e += blockDim.x) qr[e] = ldx(a.qt, a.q, qbase + e) * a.sq;
    __syncthreads();
    const int64_t qk0 = ((b * a.Hq + h) * a.Lq + i) * a.Lt;
    float mx = -INFINITY;
    for (int64_t c = threadIdx.x; c < a.Lt; c += blockDim.x) {
        const void *kp;
        int64_t kb;
        if (c < a.Lp) { kp = a.pk; kb = ((b * a.Hk + hk) * a.Lp + c) * a.E; }
        else { kp = a.k; kb = b * a.ks[0] + hk * a.ks[1] + (c - a.Lp) * a.ks[2]; }
        float x = 0;
        for (int64_t e = 0; e < a.E; e++) x += qr[e] * (ldx(a.kt, kp, kb + e) * a.sq);
        if (a.qk && a.mode == 0) stx(a.qkt, a.qk, qk0 + c, x);
        if (a.softcap > 0) x = a.softcap * tanhf(x / a.softcap);
        if (a.qk && a.mode == 1) stx(a.qkt, a.qk, qk0 + c, x);
        float bias = 0;
        if (a.mask_kind) {
            if (c >= a.mlast) bias = -INFINITY;
            else {
                int64_t off = b * a.ms[0] + h * a.ms[1] + i * a.ms[2] + c * a.ms[3];
                if (a.mask_kind == 1) { if (!((const uint8_t *)a.mask)[off]) bias = -INFINITY; }
                else bias = ldx(a.mt, a.mask, off);
            }
        }
        if (bias != -INFINITY) {
            if (a.is_causal && c > i + a.Lp) bias = -INFINITY;
            if (a.has_nonpad && c >= a.nonpad[b]) bias = -INFINITY;
        }
        x += bias;
        if (a.qk && a.mode == 2) stx(a.qkt, a.qk, qk0 + c, x);
        sc[c] = x;
        mx = fmaxf(mx, x);
    }
    mx = block_max(mx, red);
    float s = 0;
    for (int64_t c = threadIdx.x; c < a.Lt; c += blockDim.x) {
        float ev = expf(sc[c] - mx);
        sc[c] = ev;
        s += ev;
    }
    s = block_sum(s, red); /* ends with __syncthreads: every sc[c] is written */
    const float inv = 1.0f / s;
    for (int64_t c = threadIdx.x; c < a.Lt; c += blockDim.x) {
        sc[c] *= inv;
        if (a.qk && a.mode == 3) stx(a.qkt, a.qk, qk0 + c, sc[c]);
    }
    __syncthreads();
    const int64_t ybase = b * a.ys[0] + h * a.ys[1] + i * a.ys[2];
    for (int64_t e = threadIdx.x; e < a.Ev; e += blockDim.x) {
        float o = 0;
        for (int64_t c = 0; c < a.Lt; c++) {
            float v = c < a.Lp ? ldx(a.vt, a.pv, ((b * a.Hk + hk) * a.Lp + c) * a.Ev + e)
                               : ldx(a.vt, a.v, b * a.vs[0] + hk * a.vs[1] + (c - a.Lp) * a.vs[2] + e);
            o += sc[c] * v;
        }
        stx(a.yt, a.y, ybase + e, o);
    }
}

/* present = concat(past, cur) along the sequence, 4-D [B, Hk, Lt, E]; cur in its own layout (strides cs). */
template <typename T>
__global__ void attn_present_k(T *out, const T *past, const T *cur, int64_t B, int64_t Hk, int64_t Lp, int64_t Lt,
                               int64_t E, int64_t cs0, int64_t cs1, int64_t cs2) {
    GRID_LOOP(x, B * Hk * Lt * E) {
        int64_t e = x % E, c = (x / E) % Lt, bh = x / (E * Lt), h = bh % Hk, b = bh / Hk;
        out[x] = c < Lp ? past[(bh * Lp + c) * E + e] : cur[b * cs0 + h * cs1 + (c - Lp) * cs2 + e];
    }
}

static void layout_strides(int is3d, int64_t heads, int64_t len, int64_t e, int64_t s[3]) {
    if (is3d) { s[0] = len * heads * e; s[1] = e; s[2] = heads * e; }
    else { s[0] = heads * len * e; s[1] = len * e; s[2] = e; }
}

static size_t attn_smem(int64_t E, int64_t Lt) { return (size_t)(E + Lt) * sizeof(float); }

static int attn_supports(const netrun_node_desc *node, char *reason, size_t size) {
    const netrun_attention_params *p = (const netrun_attention_params *)node->params;
    if (!p) return cuda_refuse(reason, size, "no params");
    if (p->is_flex) return cuda_refuse(reason, size, "FlexAttention is not served by the CUDA kernel");
    for (int i = 0; i < 3; i++)
        if (node->n_inputs <= i || !nlp_float_dtype(node->inputs[i].dtype))
            return cuda_refuse(reason, size, "Q/K/V dtype %s (float32/float16 only)",
                               cuda_dtype_name(node->n_inputs > i ? node->inputs[i].dtype : NETRUN_DTYPE_UNDEFINED));
    const netrun_value_desc *m = nlp_desc_in(node, 3);
    if (m && m->dtype != NETRUN_DTYPE_BOOL && !nlp_float_dtype(m->dtype))
        return cuda_refuse(reason, size, "attn_mask dtype %s", cuda_dtype_name(m->dtype));
    for (int o = 3; o < 4; o++) {
        const netrun_value_desc *d = nlp_desc_out(node, o);
        if (d && !nlp_float_dtype(d->dtype)) return cuda_refuse(reason, size, "qk_matmul_output dtype");
    }
    if (p->head_size >= 0 && p->total_len >= 0 && attn_smem(p->head_size, p->total_len) > 200 * 1024)
        return cuda_refuse(reason, size, "a score row of %lld keys does not fit in shared memory",
                           (long long)p->total_len);
    return 1;
}

static netrun_status attn_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_attention_params *p = (const netrun_attention_params *)args->params;
    if (!p || args->n_inputs < 3) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: missing params or inputs");
    const netrun_tensor *Q = &args->inputs[0], *K = &args->inputs[1], *V = &args->inputs[2];
    const netrun_tensor *M = p->mask_kind ? nlp_opt_in(args, 3) : NULL;
    const netrun_tensor *PK = p->has_past ? nlp_opt_in(args, 4) : NULL, *PV = p->has_past ? nlp_opt_in(args, 5) : NULL;
    const netrun_tensor *NP = p->has_nonpad ? nlp_opt_in(args, 6) : NULL;
    netrun_tensor *Y = &args->outputs[0], *PRK = nlp_opt_out(args, 1), *PRV = nlp_opt_out(args, 2),
                  *QK = nlp_opt_out(args, 3);
    if ((p->mask_kind && !M) || (p->has_past && (!PK || !PV)) || (p->has_nonpad && !NP))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: optional inputs do not match params");
    int lead = p->input_3d ? 3 : 4;
    if (Q->rank != lead || K->rank != lead || V->rank != lead || Q->dims[0] != p->batch ||
        (p->input_3d ? Q->dims[1] != p->q_len || K->dims[1] != p->kv_len || V->dims[1] != p->kv_len
                     : Q->dims[2] != p->q_len || K->dims[2] != p->kv_len || V->dims[2] != p->kv_len))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: input shapes differ from the inferred ones");
    if (p->kv_num_heads < 1 || p->q_num_heads % p->kv_num_heads)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: bad head counts");
    attn_args a;
    memset(&a, 0, sizeof a);
    a.q = Q->data; a.k = K->data; a.v = V->data;
    a.qt = Q->dtype; a.kt = K->dtype; a.vt = V->dtype; a.yt = Y->dtype;
    a.y = Y->data;
    a.Hq = p->q_num_heads; a.Hk = p->kv_num_heads; a.group = a.Hq / a.Hk;
    a.Lq = p->q_len; a.Lk = p->kv_len; a.Lp = p->past_len; a.Lt = p->total_len;
    a.E = p->head_size; a.Ev = p->v_head_size;
    a.sq = sqrtf(p->scale);
    a.softcap = p->softcap;
    a.is_causal = p->is_causal;
    a.mode = p->qk_matmul_output_mode;
    layout_strides(p->input_3d, a.Hq, a.Lq, a.E, a.qs);
    layout_strides(p->input_3d, a.Hk, a.Lk, a.E, a.ks);
    layout_strides(p->input_3d, a.Hk, a.Lk, a.Ev, a.vs);
    layout_strides(p->input_3d, a.Hq, a.Lq, a.Ev, a.ys);
    if (M) {
        a.mask_kind = p->mask_kind;
        a.mask = M->data;
        a.mt = M->dtype;
        int64_t od[4] = {p->batch, a.Hq, a.Lq, M->dims[M->rank - 1]};
        cuda_broadcast_strides(M->rank, M->dims, 4, od, a.ms);
        a.mlast = od[3];
        if (od[3] > 1 && a.ms[3] != 1) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: unexpected mask layout");
    }
    if (PK) { a.pk = PK->data; a.pv = PV->data; }
    if (NP) { a.nonpad = (const int64_t *)NP->data; a.has_nonpad = 1; }
    if (QK) {
        if (cuda_count(QK) != p->batch * a.Hq * a.Lq * a.Lt)
            return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: qk_matmul_output has the wrong size");
        a.qk = QK->data;
        a.qkt = QK->dtype;
    }
    /* present_key / present_value */
    for (int w = 0; w < 2; w++) {
        netrun_tensor *out = w ? PRV : PRK;
        if (!out) continue;
        const netrun_tensor *past = w ? PV : PK, *cur = w ? V : K;
        const int64_t *cs = w ? a.vs : a.ks;
        int64_t E = w ? a.Ev : a.E, n = p->batch * a.Hk * a.Lt * E;
        if (cuda_count(out) != n || out->dtype != cur->dtype)
            return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda Attention: present output %d does not match", w + 1);
        if (n == 0) continue;
        const void *pd = past ? past->data : NULL;
        if (cuda_esize(out->dtype) == 2)
            attn_present_k<uint16_t><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                (uint16_t *)out->data, (const uint16_t *)pd, (const uint16_t *)cur->data, p->batch, a.Hk, a.Lp, a.Lt,
                E, cs[0], cs[1], cs[2]);
        else
            attn_present_k<uint32_t><<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(
                (uint32_t *)out->data, (const uint32_t *)pd, (const uint32_t *)cur->data, p->batch, a.Hk, a.Lp, a.Lt,
                E, cs[0], cs[1], cs[2]);
        netrun_status st = cuda_check_launch("Attention present");
        if (st != NETRUN_OK) return st;
    }
    if (p->batch == 0 || a.Hq == 0 || a.Lq == 0) return NETRUN_OK;
    if (a.Lq > INT32_MAX || a.Hq > 65535 || p->batch > 65535)
        return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda Attention: grid too large");
    size_t smem = attn_smem(a.E, a.Lt);
    netrun_status st = nlp_smem((const void *)attn_k, smem, "Attention");
    if (st != NETRUN_OK) return st;
    dim3 grid((unsigned)a.Lq, (unsigned)a.Hq, (unsigned)p->batch);
    int threads = a.Lt >= 256 || a.Ev >= 256 ? 256 : 64;
    attn_k<<<grid, threads, smem, ctx->stream>>>(a);
    return cuda_check_launch("Attention");
}

/* ================================ RotaryEmbedding ================================ */

struct rope_args {
    const void *x, *cs, *sn, *pid;
    void *y;
    int dt, pdt;
    int interleaved, input_3d;
    int64_t H, S, D, half, max_pos;
};

/* One thread per element of the output: rotated pairs from x and the cos/sin caches, the rest copied. A position
 * id outside [0, max_pos) makes that row NaN (no error can come back from the device without a sync). */
__global__ void rope_k(rope_args a, int64_t total) {
    GRID_LOOP(x, total) {
        int64_t j = x % a.D, r = x / a.D; /* r = (b, s, h) */
        int64_t b = r / (a.S * a.H), s = (r / a.H) % a.S, h = r % a.H;
        int64_t base = a.input_3d ? (b * a.S + s) * a.H * a.D + h * a.D : ((b * a.H + h) * a.S + s) * a.D;
        if (j >= 2 * a.half) {
            stx(a.dt, a.y, base + j, ldx(a.dt, a.x, base + j));
            continue;
        }
        int64_t cb;
        if (a.pid) {
            int64_t pos = ldi64(a.pdt, a.pid, b * a.S + s);
            if (pos < 0 || pos >= a.max_pos) {
                stx(a.dt, a.y, base + j, NAN);
                continue;
            }
            cb = pos * a.half;
        } else cb = (b * a.S + s) * a.half;
        int64_t k, first;
        if (a.interleaved) { k = j / 2; first = (j & 1) == 0; }
        else { k = j < a.half ? j : j - a.half; first = j < a.half; }
        int64_t i1 = a.interleaved ? 2 * k : k, i2 = a.interleaved ? 2 * k + 1 : k + a.half;
        float c = ldx(a.dt, a.cs, cb + k), sv = ldx(a.dt, a.sn, cb + k);
        float x1 = ldx(a.dt, a.x, base + i1), x2 = ldx(a.dt, a.x, base + i2);
        stx(a.dt, a.y, base + j, first ? c * x1 - sv * x2 : sv * x1 + c * x2);
    }
}

static int rope_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!node->params) return cuda_refuse(reason, size, "no params");
    for (int i = 0; i < 3; i++)
        if (node->n_inputs <= i || !nlp_float_dtype(node->inputs[i].dtype) || node->inputs[i].dtype != node->inputs[0].dtype)
            return cuda_refuse(reason, size, "X/cos/sin: one dtype, float32 or float16");
    const netrun_value_desc *pid = nlp_desc_in(node, 3);
    if (pid && pid->dtype != NETRUN_DTYPE_INT64 && pid->dtype != NETRUN_DTYPE_INT32)
        return cuda_refuse(reason, size, "position_ids dtype %s", cuda_dtype_name(pid->dtype));
    return 1;
}

static netrun_status rope_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_rotary_params *p = (const netrun_rotary_params *)args->params;
    if (!p || args->n_inputs < 3) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda RotaryEmbedding: bad params");
    const netrun_tensor *X = &args->inputs[0];
    rope_args a;
    memset(&a, 0, sizeof a);
    a.x = X->data; a.cs = args->inputs[1].data; a.sn = args->inputs[2].data; a.y = args->outputs[0].data;
    a.dt = X->dtype;
    a.interleaved = p->interleaved; a.input_3d = p->input_3d;
    a.H = p->num_heads; a.S = p->seq_len; a.D = p->head_size; a.half = p->rotary_dim / 2;
    if (p->has_position_ids) {
        const netrun_tensor *pid = nlp_opt_in(args, 3);
        if (!pid || pid->rank != 2) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda RotaryEmbedding: position_ids missing");
        a.pid = pid->data;
        a.pdt = pid->dtype;
        a.max_pos = args->inputs[1].dims[0];
    }
    int64_t total = p->batch * a.S * a.H * a.D;
    if (total != cuda_count(X) || 2 * a.half > a.D)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda RotaryEmbedding: input shape differs from the inferred one");
    if (total == 0) return NETRUN_OK;
    rope_k<<<cuda_blocks(total), CUDA_THREADS, 0, ctx->stream>>>(a, total);
    return cuda_check_launch("RotaryEmbedding");
}

/* ================================ LinearAttention ================================ */

struct la_args {
    const void *q, *k, *v, *past, *decay, *beta;
    void *y, *state;
    int dt, pdt, sdt;
    int gating, delta, decay_per_key;
    float scale;
    int64_t Hq, Hk, T, dk, dv, beta_heads;
};

/* One block per (batch, kv head), the state S [dk, dv] in shared memory; thread m owns column m of S (and
 * vt[m]), so the recurrence needs no synchronisation inside a step. */
__global__ void la_k(la_args a) {
    extern __shared__ float smem[];
    const int64_t dk = a.dk, dv = a.dv, g = a.Hq / a.Hk;
    float *S = smem, *kt = S + dk * dv, *vt = kt + dk, *qv = vt + dv, *dec = qv + g * dk;
    const int64_t task = blockIdx.x, b = task / a.Hk, h = task % a.Hk;
    for (int64_t x = threadIdx.x; x < dk * dv; x += blockDim.x)
        S[x] = a.past ? ldx(a.pdt, a.past, task * dk * dv + x) : 0.0f;
    for (int64_t t = 0; t < a.T; t++) {
        __syncthreads(); /* the previous step is done with kt, vt, qv, dec */
        int64_t kb = (b * a.T + t) * a.Hk * dk + h * dk, vb = (b * a.T + t) * a.Hk * dv + h * dv;
        for (int64_t d = threadIdx.x; d < dk; d += blockDim.x) {
            kt[d] = ldx(a.dt, a.k, kb + d);
            if (a.gating && a.decay_per_key) dec[d] = expf(ldx(a.dt, a.decay, kb + d));
        }
        for (int64_t m = threadIdx.x; m < dv; m += blockDim.x) vt[m] = ldx(a.dt, a.v, vb + m);
        for (int64_t x = threadIdx.x; x < g * dk; x += blockDim.x) {
            int64_t hq = h * g + x / dk;
            qv[x] = ldx(a.dt, a.q, (b * a.T + t) * a.Hq * dk + hq * dk + x % dk);
        }
        __syncthreads();
        float eh = a.gating && !a.decay_per_key ? expf(ldx(a.dt, a.decay, (b * a.T + t) * a.Hk + h)) : 1.0f;
        float bt = a.delta ? ldx(a.dt, a.beta, (b * a.T + t) * a.beta_heads + (a.beta_heads == 1 ? 0 : h)) : 0.0f;
        for (int64_t m = threadIdx.x; m < dv; m += blockDim.x) {
            if (a.gating)
                for (int64_t d = 0; d < dk; d++) S[d * dv + m] *= a.decay_per_key ? dec[d] : eh;
            float vm = vt[m];
            if (a.delta) {
                float r = 0;
                for (int64_t d = 0; d < dk; d++) r += S[d * dv + m] * kt[d];
                vm = bt * (vm - r);
            }
            for (int64_t d = 0; d < dk; d++) S[d * dv + m] += kt[d] * vm;
            for (int64_t j = 0; j < g; j++) {
                float o = 0;
                for (int64_t d = 0; d < dk; d++) o += qv[j * dk + d] * S[d * dv + m];
                stx(a.dt, a.y, (b * a.T + t) * a.Hq * dv + (h * g + j) * dv + m, a.scale * o);
            }
        }
    }
    if (a.state)
        for (int64_t m = threadIdx.x; m < dv; m += blockDim.x)
            for (int64_t d = 0; d < dk; d++) stx(a.sdt, a.state, task * dk * dv + d * dv + m, S[d * dv + m]);
}

static int half_float_inputs(const netrun_node_desc *node, char *reason, size_t size) {
    if (!node->params) return cuda_refuse(reason, size, "no params");
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].rank >= 0 && !nlp_float_dtype(node->inputs[i].dtype))
            return cuda_refuse(reason, size, "input %d dtype %s (float32/float16 only)", i,
                               cuda_dtype_name(node->inputs[i].dtype));
    return 1;
}

static size_t la_smem(const netrun_linear_attention_params *p) {
    int64_t g = p->q_num_heads / (p->kv_num_heads > 0 ? p->kv_num_heads : 1);
    return (size_t)(p->d_k * p->d_v + 2 * p->d_k + p->d_v + g * p->d_k) * sizeof(float);
}

static int la_supports(const netrun_node_desc *node, char *reason, size_t size) {
    if (!half_float_inputs(node, reason, size)) return 0;
    const netrun_linear_attention_params *p = (const netrun_linear_attention_params *)node->params;
    if (p->d_k >= 0 && p->d_v >= 0 && la_smem(p) > 200 * 1024)
        return cuda_refuse(reason, size, "state of %lld x %lld does not fit in shared memory", (long long)p->d_k,
                           (long long)p->d_v);
    return 1;
}

static netrun_status la_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_linear_attention_params *p = (const netrun_linear_attention_params *)args->params;
    if (!p || args->n_inputs < 3) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda LinearAttention: bad params");
    const netrun_tensor *Q = &args->inputs[0];
    const netrun_tensor *past = p->has_past ? nlp_opt_in(args, 3) : NULL, *decay = p->gating ? nlp_opt_in(args, 4) : NULL,
                        *beta = p->delta ? nlp_opt_in(args, 5) : NULL;
    netrun_tensor *st_out = nlp_opt_out(args, 1);
    if ((p->has_past && !past) || (p->gating && !decay) || (p->delta && !beta))
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda LinearAttention: optional inputs do not match params");
    if (Q->rank != 3 || Q->dims[0] != p->batch || Q->dims[1] != p->seq_len || p->kv_num_heads < 1 ||
        p->q_num_heads % p->kv_num_heads)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda LinearAttention: input shapes differ from the inferred ones");
    la_args a;
    memset(&a, 0, sizeof a);
    a.q = Q->data; a.k = args->inputs[1].data; a.v = args->inputs[2].data;
    a.past = past ? past->data : NULL; a.decay = decay ? decay->data : NULL; a.beta = beta ? beta->data : NULL;
    a.y = args->outputs[0].data;
    a.state = st_out ? st_out->data : NULL;
    a.dt = Q->dtype; a.pdt = past ? past->dtype : Q->dtype; a.sdt = st_out ? st_out->dtype : Q->dtype;
    a.gating = p->gating; a.delta = p->delta; a.decay_per_key = p->decay_per_key;
    a.scale = p->scale;
    a.Hq = p->q_num_heads; a.Hk = p->kv_num_heads; a.T = p->seq_len; a.dk = p->d_k; a.dv = p->d_v;
    a.beta_heads = p->beta_heads;
    int64_t tasks = p->batch * a.Hk;
    if (tasks <= 0) return NETRUN_OK;
    if (tasks > INT32_MAX) return cuda_host->error(NETRUN_ERR_UNSUPPORTED, "cuda LinearAttention: grid too large");
    size_t smem = la_smem(p);
    netrun_status st = nlp_smem((const void *)la_k, smem, "LinearAttention");
    if (st != NETRUN_OK) return st;
    int threads = a.dv > 128 ? 256 : a.dv > 32 ? 128 : 32;
    la_k<<<(unsigned)tasks, threads, smem, ctx->stream>>>(a);
    return cuda_check_launch("LinearAttention");
}

/* ================================ CausalConvWithState ================================ */

struct cc_args {
    const void *x, *w, *bias, *past;
    void *y, *state;
    int dt, silu;
    int64_t C, L, K;
};

/* Element c of the padded row [past or zeros (K-1), x] of row r = (b, ch). */
__device__ __forceinline__ float cc_pad(const cc_args &a, int64_t r, int64_t c) {
    int64_t K1 = a.K - 1;
    if (c >= K1) return ldx(a.dt, a.x, r * a.L + c - K1);
    return a.past ? ldx(a.dt, a.past, r * K1 + c) : 0.0f;
}

__global__ void cc_k(cc_args a, int64_t rows) {
    const int64_t per = a.L + a.K - 1; /* L outputs, then K-1 state values */
    GRID_LOOP(x, rows * per) {
        int64_t r = x / per, o = x % per, ch = r % a.C;
        if (o < a.L) {
            float acc = a.bias ? ldx(a.dt, a.bias, ch) : 0.0f;
            for (int64_t k = 0; k < a.K; k++) acc += ldx(a.dt, a.w, ch * a.K + k) * cc_pad(a, r, o + k);
            if (a.silu) {
                acc = round_dt(a.dt, acc); /* the reference rounds the conv output to the input type first */
                acc = acc / (1.0f + expf(-acc));
            }
            stx(a.dt, a.y, r * a.L + o, acc);
        } else if (a.state) {
            int64_t c = o - a.L;
            stx(a.dt, a.state, r * (a.K - 1) + c, cc_pad(a, r, a.L + c));
        }
    }
}

static netrun_status cc_run(cuda_context *ctx, void *state, const netrun_kernel_args *args) {
    (void)state;
    const netrun_causal_conv_params *p = (const netrun_causal_conv_params *)args->params;
    if (!p || args->n_inputs < 2) return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda CausalConvWithState: bad params");
    const netrun_tensor *X = &args->inputs[0];
    const netrun_tensor *bias = p->has_bias ? nlp_opt_in(args, 2) : NULL, *past = p->has_past ? nlp_opt_in(args, 3) : NULL;
    netrun_tensor *st_out = nlp_opt_out(args, 1);
    if ((p->has_bias && !bias) || (p->has_past && !past) || X->rank != 3 || X->dims[0] != p->batch ||
        X->dims[1] != p->channels || X->dims[2] != p->length || p->kernel < 1)
        return cuda_host->error(NETRUN_ERR_INTERNAL, "cuda CausalConvWithState: inputs differ from the inferred ones");
    cc_args a;
    memset(&a, 0, sizeof a);
    a.x = X->data; a.w = args->inputs[1].data; a.bias = bias ? bias->data : NULL; a.past = past ? past->data : NULL;
    a.y = args->outputs[0].data; a.state = st_out ? st_out->data : NULL;
    a.dt = X->dtype; a.silu = p->silu;
    a.C = p->channels; a.L = p->length; a.K = p->kernel;
    int64_t rows = p->batch * p->channels, n = rows * (a.L + a.K - 1);
    if (n <= 0) return NETRUN_OK;
    cc_k<<<cuda_blocks(n), CUDA_THREADS, 0, ctx->stream>>>(a, rows);
    return cuda_check_launch("CausalConvWithState");
}

extern "C" const cuda_op cuda_ops_attention[] = {
    {"Attention", CUDA_FLOAT_DTYPES,
     "3-D or 4-D; GQA; bool/float masks; past/present; softcap; qk output modes 0-3; softmax in float; "
     "score row (head_size + total_len floats) in shared memory",
     attn_supports, NULL, attn_run, NULL},
    {"RotaryEmbedding", CUDA_FLOAT_DTYPES, "position ids outside the cache give NaN rows", rope_supports, NULL, rope_run,
     NULL},
    {"LinearAttention", CUDA_FLOAT_DTYPES, "computed in float; state in shared memory", la_supports, NULL, la_run, NULL},
    {"CausalConvWithState", CUDA_FLOAT_DTYPES, "", half_float_inputs, NULL, cc_run, NULL},
    {NULL, 0, NULL, NULL, NULL, NULL, NULL}};

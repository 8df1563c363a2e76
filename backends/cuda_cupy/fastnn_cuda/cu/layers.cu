// Max pooling, batch normalisation and the recurrent cells (fastnn_cuda/layers.py).
//
// Pooling and the cells are flat grid-stride loops, one element per thread, with no
// exchange between threads (the host tests run them thread after thread). Batch norm
// runs one block per channel (FASTNN_BN_THREADS threads, a shared-memory tree sum in
// double); the host tests run it with one thread per block.

template <typename T> __device__ __forceinline__ T layer_sigmoid(T z) {
    // as cu/activations.cu's sigmoid_of: no overflow, full precision for very negative z
    if (z >= T(0)) return T(1) / (T(1) + f_exp(-z));
    const T e = f_exp(z);
    return e / (T(1) + e);
}

#define FLAT_FIRST ((i64)blockIdx.x * blockDim.x + threadIdx.x)
#define FLAT_STEP ((i64)gridDim.x * blockDim.x)

// ---------------------------------------------------------------- max pooling
// geometry: C, H, W, OH, OW, kernel (kh, kw), stride (sh, sw), padding (ph, pw),
// dilation (dh, dw); x (N, C, H, W) is read through its strides (xs: n, c, h, w).

struct PoolGeometry {
    i64 C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw;
};
// passed as 13 scalars (64-bit each, as every scalar parameter here)
#define POOL_PARAMS i64 C, i64 H, i64 W, i64 OH, i64 OW, i64 kh, i64 kw, i64 sh, i64 sw, \
                    i64 ph, i64 pw, i64 dh, i64 dw
#define POOL_ARGS C, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw

template <typename T>
__device__ void max_pool2d_forward_body(const T* x, T* out, PoolGeometry g, i64 xsn, i64 xsc,
                                        i64 xsh, i64 xsw, i64 total) {
    for (i64 idx = FLAT_FIRST; idx < total; idx += FLAT_STEP) {
        const i64 j = idx % g.OW, i = (idx / g.OW) % g.OH;
        const i64 c = (idx / (g.OW * g.OH)) % g.C, n = idx / (g.OW * g.OH * g.C);
        const T* plane = x + n * xsn + c * xsc;
        T m = neg_inf<T>();
        for (i64 a = 0; a < g.kh; ++a) {
            const i64 h = i * g.sh - g.ph + a * g.dh;
            if (h < 0 || h >= g.H) continue;
            for (i64 b = 0; b < g.kw; ++b) {
                const i64 w = j * g.sw - g.pw + b * g.dw;
                if (w < 0 || w >= g.W) continue;
                m = nan_max(m, plane[h * xsh + w * xsw]);
            }
        }
        out[idx] = m;
    }
}

// pick[o]: the in-plane index h * W + w that window o's gradient goes to, PyTorch's index:
// visiting the window in row-major order, the first position, then any later one greater
// than the best so far or NaN (ties keep the first; a NaN window, its last NaN);
// share[o] = grad[o], read through grad's strides
template <typename T>
__device__ void max_pool2d_share_body(const T* x, const T* grad, T* share, i64* pick,
                                      PoolGeometry g, i64 xsn, i64 xsc, i64 xsh, i64 xsw,
                                      i64 gsn, i64 gsc, i64 gsh, i64 gsw, i64 total) {
    for (i64 idx = FLAT_FIRST; idx < total; idx += FLAT_STEP) {
        const i64 j = idx % g.OW, i = (idx / g.OW) % g.OH;
        const i64 c = (idx / (g.OW * g.OH)) % g.C, n = idx / (g.OW * g.OH * g.C);
        const T* plane = x + n * xsn + c * xsc;
        T best = T(0);
        i64 at = -1;
        for (i64 a = 0; a < g.kh; ++a) {
            const i64 h = i * g.sh - g.ph + a * g.dh;
            if (h < 0 || h >= g.H) continue;
            for (i64 b = 0; b < g.kw; ++b) {
                const i64 w = j * g.sw - g.pw + b * g.dw;
                if (w < 0 || w >= g.W) continue;
                const T v = plane[h * xsh + w * xsw];
                if (at < 0 || v > best || v != v) {
                    best = v;
                    at = h * g.W + w;
                }
            }
        }
        pick[idx] = at;
        share[idx] = grad[n * gsn + c * gsc + i * gsh + j * gsw];
    }
}

// dx[n, c, h, w] (contiguous): the gradients of the windows that picked (h, w)
template <typename T>
__device__ void max_pool2d_backward_body(const T* share, const i64* pick, T* dx,
                                         PoolGeometry g, i64 total) {
    for (i64 idx = FLAT_FIRST; idx < total; idx += FLAT_STEP) {
        const i64 w = idx % g.W, h = (idx / g.W) % g.H;
        const i64 c = (idx / (g.W * g.H)) % g.C, n = idx / (g.W * g.H * g.C);
        const i64 base = (n * g.C + c) * g.OH * g.OW, here = h * g.W + w;
        T acc = T(0);
        for (i64 a = 0; a < g.kh; ++a) {
            const i64 num_h = h + g.ph - a * g.dh;
            if (num_h < 0 || num_h % g.sh != 0 || num_h / g.sh >= g.OH) continue;
            const i64 i = num_h / g.sh;
            for (i64 b = 0; b < g.kw; ++b) {
                const i64 num_w = w + g.pw - b * g.dw;
                if (num_w < 0 || num_w % g.sw != 0 || num_w / g.sw >= g.OW) continue;
                const i64 o = base + i * g.OW + num_w / g.sw;
                if (pick[o] == here) acc += share[o];
            }
        }
        dx[idx] = acc;
    }
}

// ---------------------------------------------------------------- batch normalisation
// x (N, C, S) contiguous; one block per channel (grid-stride over channels).

__device__ __forceinline__ double block_sum(double v, double* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const double r = red[0];
    __syncthreads();
    return r;
}

template <typename T>
__device__ void batch_norm_forward_body(const T* x, const T* weight, const T* bias, T* out,
                                        T* mean_out, T* var_out, i64 N, i64 C, i64 S,
                                        double eps) {
    __shared__ double red[FASTNN_BN_THREADS];
    const i64 m = N * S;
    for (i64 c = blockIdx.x; c < C; c += gridDim.x) {
        double acc = 0.0;
        for (i64 k = threadIdx.x; k < m; k += blockDim.x)
            acc += (double)x[(k / S) * C * S + c * S + k % S];
        const T mean = (T)(block_sum(acc, red) / (double)m);
        acc = 0.0;
        for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
            const T d = x[(k / S) * C * S + c * S + k % S] - mean;
            acc += (double)(d * d);
        }
        const T var = (T)(block_sum(acc, red) / (double)m);
        const T scale = (T)(1.0 / sqrt((double)var + eps)) * weight[c];
        const T shift = bias[c];
        for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
            const i64 at = (k / S) * C * S + c * S + k % S;
            out[at] = (x[at] - mean) * scale + shift;
        }
        if (threadIdx.x == 0) {
            mean_out[c] = mean;
            var_out[c] = var;
        }
    }
}

template <typename T>
__device__ void batch_norm_backward_body(const T* x, const T* weight, const T* mean,
                                         const T* var, const T* grad, T* dx, T* dweight,
                                         T* dbias, i64 N, i64 C, i64 S, double eps) {
    __shared__ double red[FASTNN_BN_THREADS];
    const i64 m = N * S;
    for (i64 c = blockIdx.x; c < C; c += gridDim.x) {
        const T inv = (T)(1.0 / sqrt((double)var[c] + eps));
        const T mu = mean[c];
        double sg = 0.0, sgx = 0.0;
        for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
            const i64 at = (k / S) * C * S + c * S + k % S;
            const T g = grad[at];
            sg += (double)g;
            sgx += (double)(g * ((x[at] - mu) * inv));
        }
        const T db = (T)block_sum(sg, red);
        const T dw = (T)block_sum(sgx, red);
        const T db_m = db * (T)(1.0 / (double)m), dw_m = dw * (T)(1.0 / (double)m);
        const T factor = inv * weight[c];
        for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
            const i64 at = (k / S) * C * S + c * S + k % S;
            const T xhat = (x[at] - mu) * inv;
            dx[at] = (grad[at] - db_m - xhat * dw_m) * factor;
        }
        if (threadIdx.x == 0) {
            dbias[c] = db;
            dweight[c] = dw;
        }
    }
}

// ---------------------------------------------------------------- recurrent cells
// One step over (N, H) elements; the matmuls are cuBLAS calls between the launches.
// LSTM: xp_t (N, 4H) the input projection plus bias, hh (N, 4H) = h w_hh^T.

template <typename T>
__device__ void lstm_cell_forward_body(const T* xp_t, const T* hh, const T* c_prev, T* gates_t,
                                       T* c_t, T* h_t, i64 N, i64 H) {
    for (i64 idx = FLAT_FIRST; idx < N * H; idx += FLAT_STEP) {
        const i64 n = idx / H, k = idx % H, row = n * 4 * H + k;
        const T i = layer_sigmoid(xp_t[row] + hh[row]);
        const T f = layer_sigmoid(xp_t[row + H] + hh[row + H]);
        const T g = f_tanh(xp_t[row + 2 * H] + hh[row + 2 * H]);
        const T o = layer_sigmoid(xp_t[row + 3 * H] + hh[row + 3 * H]);
        const T c = f * c_prev[idx] + i * g;
        gates_t[row] = i;
        gates_t[row + H] = f;
        gates_t[row + 2 * H] = g;
        gates_t[row + 3 * H] = o;
        c_t[idx] = c;
        h_t[idx] = o * f_tanh(c);
    }
}

// dh = rec + grad_out_t (rec: da_{t+1} w_hh, or none at the last step); dc in place:
// dL/dc_t on entry, dL/dc_{t-1} on exit; da_t (N, 4H) the gates' pre-activation gradients.
template <typename T>
__device__ void lstm_cell_backward_body(const T* grad_out_t, const T* rec, const T* gates_t,
                                        const T* c_t, const T* c_prev, T* dc, T* da_t, i64 N,
                                        i64 H) {
    for (i64 idx = FLAT_FIRST; idx < N * H; idx += FLAT_STEP) {
        const i64 n = idx / H, k = idx % H, row = n * 4 * H + k;
        const T dh = rec ? rec[idx] + grad_out_t[idx] : grad_out_t[idx];
        const T i = gates_t[row], f = gates_t[row + H], g = gates_t[row + 2 * H];
        const T o = gates_t[row + 3 * H];
        const T tc = f_tanh(c_t[idx]);
        const T d = dc[idx] + (dh * o) * (T(1) - tc * tc);
        da_t[row] = (d * g) * (i * (T(1) - i));
        da_t[row + H] = (d * c_prev[idx]) * (f * (T(1) - f));
        da_t[row + 2 * H] = (d * i) * (T(1) - g * g);
        da_t[row + 3 * H] = (dh * tc) * (o * (T(1) - o));
        dc[idx] = d * f;
    }
}

// GRU: p_t (N, 3H) the input projection plus b_ih, q (N, 3H) = h w_hh^T (b_hh added here);
// saved_t (N, 4H) = r, z, n, q_n.
template <typename T>
__device__ void gru_cell_forward_body(const T* p_t, const T* q, const T* b_hh, const T* h_prev,
                                      T* saved_t, T* h_t, i64 N, i64 H) {
    for (i64 idx = FLAT_FIRST; idx < N * H; idx += FLAT_STEP) {
        const i64 n = idx / H, k = idx % H, row = n * 3 * H + k, out = n * 4 * H + k;
        const T r = layer_sigmoid(p_t[row] + (q[row] + b_hh[k]));
        const T z = layer_sigmoid(p_t[row + H] + (q[row + H] + b_hh[k + H]));
        const T qn = q[row + 2 * H] + b_hh[k + 2 * H];
        const T nn = f_tanh(p_t[row + 2 * H] + r * qn);
        saved_t[out] = r;
        saved_t[out + H] = z;
        saved_t[out + 2 * H] = nn;
        saved_t[out + 3 * H] = qn;
        h_t[idx] = nn + z * (h_prev[idx] - nn);
    }
}

// dh = (carry + rec) + grad_out_t (carry = dh_{t+1} z_{t+1}, rec = dq_{t+1} w_hh; both none at
// the last step); carry is rewritten in place with dh z; dp_t, dq_t (N, 3H).
template <typename T>
__device__ void gru_cell_backward_body(const T* grad_out_t, T* carry, const T* rec,
                                       const T* saved_t, const T* h_prev, T* dp_t, T* dq_t,
                                       i64 N, i64 H) {
    for (i64 idx = FLAT_FIRST; idx < N * H; idx += FLAT_STEP) {
        const i64 n = idx / H, k = idx % H, row = n * 3 * H + k, in = n * 4 * H + k;
        const T dh = rec ? (carry[idx] + rec[idx]) + grad_out_t[idx] : grad_out_t[idx];
        const T r = saved_t[in], z = saved_t[in + H], nn = saved_t[in + 2 * H];
        const T qn = saved_t[in + 3 * H];
        const T dan = (dh * (T(1) - z)) * (T(1) - nn * nn);
        const T dar = (dan * qn) * (r * (T(1) - r));
        const T daz = (dh * (h_prev[idx] - nn)) * (z * (T(1) - z));
        dp_t[row] = dar;
        dp_t[row + H] = daz;
        dp_t[row + 2 * H] = dan;
        dq_t[row] = dar;
        dq_t[row + H] = daz;
        dq_t[row + 2 * H] = dan * r;
        carry[idx] = dh * z;
    }
}

#define FASTNN_LAYERS(T, SUFFIX)                                                             \
    extern "C" __global__ void max_pool2d_forward_##SUFFIX(                                  \
        const T* x, T* out, POOL_PARAMS, i64 xsn, i64 xsc, i64 xsh, i64 xsw, i64 total) { \
        max_pool2d_forward_body<T>(x, out, PoolGeometry{POOL_ARGS}, xsn, xsc, xsh, xsw, total);                    \
    }                                                                                        \
    extern "C" __global__ void max_pool2d_share_##SUFFIX(                                    \
        const T* x, const T* grad, T* share, i64* pick, POOL_PARAMS, i64 xsn, i64 xsc,       \
        i64 xsh, i64 xsw, i64 gsn, i64 gsc, i64 gsh, i64 gsw, i64 total) {                   \
        max_pool2d_share_body<T>(x, grad, share, pick, PoolGeometry{POOL_ARGS}, xsn, xsc,   \
                                 xsh, xsw, gsn, gsc, gsh, gsw, total);                       \
    }                                                                                        \
    extern "C" __global__ void max_pool2d_backward_##SUFFIX(                                 \
        const T* share, const i64* pick, T* dx, POOL_PARAMS, i64 total) {                    \
        max_pool2d_backward_body<T>(share, pick, dx, PoolGeometry{POOL_ARGS}, total);        \
    }                                                                                        \
    extern "C" __global__ void batch_norm_forward_##SUFFIX(                                  \
        const T* x, const T* weight, const T* bias, T* out, T* mean, T* var, i64 N, i64 C,   \
        i64 S, double eps) {                                                                 \
        batch_norm_forward_body<T>(x, weight, bias, out, mean, var, N, C, S, eps);           \
    }                                                                                        \
    extern "C" __global__ void batch_norm_backward_##SUFFIX(                                 \
        const T* x, const T* weight, const T* mean, const T* var, const T* grad, T* dx,      \
        T* dweight, T* dbias, i64 N, i64 C, i64 S, double eps) {                             \
        batch_norm_backward_body<T>(x, weight, mean, var, grad, dx, dweight, dbias, N, C, S, \
                                    eps);                                                    \
    }                                                                                        \
    extern "C" __global__ void lstm_cell_forward_##SUFFIX(                                   \
        const T* xp_t, const T* hh, const T* c_prev, T* gates_t, T* c_t, T* h_t, i64 N,      \
        i64 H) {                                                                             \
        lstm_cell_forward_body<T>(xp_t, hh, c_prev, gates_t, c_t, h_t, N, H);                \
    }                                                                                        \
    extern "C" __global__ void lstm_cell_backward_##SUFFIX(                                  \
        const T* grad_out_t, const T* rec, const T* gates_t, const T* c_t, const T* c_prev,  \
        T* dc, T* da_t, i64 N, i64 H) {                                                      \
        lstm_cell_backward_body<T>(grad_out_t, rec, gates_t, c_t, c_prev, dc, da_t, N, H);   \
    }                                                                                        \
    extern "C" __global__ void gru_cell_forward_##SUFFIX(                                    \
        const T* p_t, const T* q, const T* b_hh, const T* h_prev, T* saved_t, T* h_t, i64 N, \
        i64 H) {                                                                             \
        gru_cell_forward_body<T>(p_t, q, b_hh, h_prev, saved_t, h_t, N, H);                  \
    }                                                                                        \
    extern "C" __global__ void gru_cell_backward_##SUFFIX(                                   \
        const T* grad_out_t, T* carry, const T* rec, const T* saved_t, const T* h_prev,      \
        T* dp_t, T* dq_t, i64 N, i64 H) {                                                    \
        gru_cell_backward_body<T>(grad_out_t, carry, rec, saved_t, h_prev, dp_t, dq_t, N, H); \
    }

FASTNN_INSTANTIATE(FASTNN_LAYERS)

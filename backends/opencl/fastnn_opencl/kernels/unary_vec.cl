// Transcendental unary ops on contiguous floating arrays, VW elements per work-item.
// NOTE: PoCL calls exp, erf, tanh... once per element from a work-item loop (8-13x the
// time of one call on a vector, measured on float32 exp and erf), so each work-item
// takes one vector (at most 32 bytes); the last, partial one goes element by element.
// Host defines: T (float or double), VW (vector width), OP (index into the list below).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VT CAT(T, VW)
typedef VT __attribute__((aligned(sizeof(T)))) VT_UNALIGNED;

#if OP == 0
#define F(x, T_) exp(x)
#elif OP == 1
#define F(x, T_) log(x)
#elif OP == 2
#define F(x, T_) sqrt(x)
#elif OP == 3
#define F(x, T_) erf(x)
#elif OP == 4
#define F(x, T_) SAFE_TANH(x, T_)
#elif OP == 5
#define F(x, T_) SIGMOID(x, T_)
#elif OP == 6
#define F(x, T_) GELU(x, T_)
#elif OP == 7
#define F(x, T_) ((x) * SIGMOID(x, T_))
#elif OP == 8
#define F(x, T_) SOFTPLUS(x, T_)
#elif OP == 9
#define F(x, T_) sin(x)
#else
#define F(x, T_) cos(x)
#endif

__kernel void k_unary_vec(__global T *out, __global const T *src, const int off,
                          const int n) {
    const int i = get_global_id(0) * VW;
    if (i + VW <= n) {
        const VT x = *(__global const VT_UNALIGNED *)(src + off + i);
        *(__global VT_UNALIGNED *)(out + i) = F(x, VT);
    } else {
        for (int j = i; j < n; ++j) {
            const T x = src[off + j];
            out[j] = F(x, T);
        }
    }
}

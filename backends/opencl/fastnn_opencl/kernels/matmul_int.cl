// Integer and bool matrix products, with NumPy's semantics: integers wrap around,
// bool @ bool is an OR of ANDs. One work-item per output element (c, r, batch):
// exact products are rare next to float GEMMs, and a loop is all they need.
// Host defines: T (an integer type, or uchar for bool), UT (its unsigned type), IS_BOOL.

__kernel void k_gemm_exact(const int M, const int N, const int K,
                           __global const T *a, const int aoff, const int a_bs,
                           const int a_rs, const int a_cs,
                           __global const T *b, const int boff, const int b_bs,
                           const int b_rs, const int b_cs,
                           __global T *c, const int coff, const int c_bs, const int c_rs) {
    const int j = get_global_id(0), i = get_global_id(1), z = get_global_id(2);
    if (j >= N || i >= M) return;
    const __global T *row = a + aoff + z * a_bs + i * a_rs;
    const __global T *col = b + boff + z * b_bs + j * b_cs;
#if IS_BOOL
    uchar acc = 0;
    for (int p = 0; p < K && !acc; ++p) acc = row[p * a_cs] && col[p * b_rs];
    c[coff + z * c_bs + i * c_rs + j] = acc;
#else
    // NOTE: signed overflow is undefined in C; the unsigned type wraps modulo 2^bits,
    // which is two's complement arithmetic, as NumPy's int32/int64 products give.
    UT acc = 0;
    for (int p = 0; p < K; ++p) acc += (UT)row[p * a_cs] * (UT)col[p * b_rs];
    c[coff + z * c_bs + i * c_rs + j] = (T)acc;
#endif
}

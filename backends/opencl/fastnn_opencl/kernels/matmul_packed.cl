// The packed CPU GEMM (PoCL): B packed into unit-stride column panels, then a
// register-blocked kernel over them and A in place; k_gemm_sum adds split-k partial
// sums. Included by matmul.cl under #ifdef KC (its VT, VLOAD, UNROLL, ... in scope).

// ---- Packed GEMM for CPU devices (PoCL), for products big enough to repay a packing pass.
// B is copied into column panels Bp[batch][N/NR][K][NR] (zero padded, through any strides:
// a transposed weight costs nothing), so the kernel reads it as one unit-stride stream; A
// is read in place through its strides (TM broadcasts a k: a row-major or transposed A
// reads as well, and the pass that copied it cost more than it saved). A work-item owns one
// column panel and R row panels; k runs in chunks of KC outside the row panels, so the
// panel's chunk (KC x NR) stays in L1/L2 while the R row panels stream past it. Between
// chunks the TM x NR partial sums go through Cp (padded rows of width NP), after the last
// chunk to C. The inner loop is TM broadcasts, VN vector loads and TM * VN FMAs.
#define NR (VW * VN)

// B's column panels: work-item (kb, p, batch) packs rows k in [8 kb, 8 kb + 8) of panel p
// (8 rows an item: PoCL's cost per work-item dominated with one), through any strides (a
// transposed weight: sbk = 1, read column by column).
#define PACK_ROWS 8
#define T4 CAT(T, 4)
typedef T4 __attribute__((aligned(sizeof(T)))) T4_UNALIGNED;
__kernel WIDE void k_pack_b(const int K, const int N, __global const T *B, const int offb,
                            const int sbb, const int sbk, const int sbn, __global T *Bp) {
    const int k0 = get_global_id(0) * PACK_ROWS, p = get_global_id(1);
    const int batch = get_global_id(2);
    const int k1 = k0 + PACK_ROWS < K ? k0 + PACK_ROWS : K;
    const int panels = (N + NR - 1) / NR;
    const int j0 = p * NR;
    B += offb + batch * sbb + j0 * sbn;
    __global T *dst = Bp + (((long)batch * panels + p) * K + k0) * NR;
    if (sbn == 1 && j0 + NR <= N) {
        for (int k = k0; k < k1; ++k) {
            UNROLL for (int v = 0; v < VN; ++v) VSTORE(VLOAD(B + k * sbk + v * VW), dst + v * VW);
            dst += NR;
        }
        return;
    }
    const int cols = N - j0 < NR ? N - j0 : NR;
    if (sbk == 1 && k1 - k0 == PACK_ROWS) {  // B = W.T: 8 k of a column in two loads
        for (int c = 0; c < cols; ++c) {
            const __global T *b = B + c * sbn + k0;
            const T4 lo = *(const __global T4_UNALIGNED *)b;
            const T4 hi = *(const __global T4_UNALIGNED *)(b + 4);
            dst[c] = lo.x;
            dst[NR + c] = lo.y;
            dst[2 * NR + c] = lo.z;
            dst[3 * NR + c] = lo.w;
            dst[4 * NR + c] = hi.x;
            dst[5 * NR + c] = hi.y;
            dst[6 * NR + c] = hi.z;
            dst[7 * NR + c] = hi.w;
        }
        for (int c = cols; c < NR; ++c) {
            UNROLL for (int r = 0; r < PACK_ROWS; ++r) dst[r * NR + c] = (T)0;
        }
        return;
    }
    for (int c = 0; c < NR; ++c) {
        const __global T *b = B + c * sbn;
        for (int k = k0; k < k1; ++k) dst[(k - k0) * NR + c] = c < cols ? b[k * sbk] : (T)0;
    }
}

// With S > 1 (split k: few output tiles, long k), dimension 2 runs batch * S and split s
// takes k in [s * KC, (s + 1) * KC): one chunk, its sums written whole to its own slice of
// Cp ((batch * S + s) * MP * NP), which k_gemm_sum then adds up into C.
__kernel WIDE void k_gemm_packed(const int M, const int N, const int K, __global const T *A,
                                 const int offa, const int sab, const int sam, const int sak,
                                 const int K2, const int sak2, __global const T *Bp,
                                 __global T *Cp, __global T *C, const int offc,
                                 const int scb, const int ldc, const int S) {
    const int jb = get_global_id(0), group = get_global_id(1);
    const int batch = get_global_id(2) / S, split = get_global_id(2) - batch * S;
    const int mb = (M + TM - 1) / TM, nb = (N + NR - 1) / NR;
    const int j0 = jb * NR;
    if (jb >= nb || group * R >= mb) return;
    const int ib_end = (group + 1) * R < mb ? (group + 1) * R : mb;
    const int np = nb * NR;
    A += offa + batch * sab;
    Bp += (long)batch * nb * K * NR;
    Cp += (long)(batch * S + split) * mb * TM * np;
    C += offc + batch * scb;
    const int cols = N - j0 < NR ? N - j0 : NR;
    const int k_end = S > 1 ? ((split + 1) * KC < K ? (split + 1) * KC : K) : K;
    for (int k0 = S > 1 ? split * KC : 0; k0 < k_end; k0 += KC) {
        const int k1 = k0 + KC < k_end ? k0 + KC : k_end;
        for (int ib = group * R; ib < ib_end; ++ib) {
            const int i0 = ib * TM;
            const int rows = M - i0 < TM ? M - i0 : TM;
            int arow[TM];  // rows past M read row i0 and are not stored
            UNROLL for (int r = 0; r < TM; ++r) arow[r] = (r < rows ? i0 + r : i0) * sam;
            __global T *cp = Cp + i0 * np + j0;
            VT acc[TM][VN];
            if (k0 == 0 || S > 1) {
                UNROLL for (int r = 0; r < TM; ++r) UNROLL for (int v = 0; v < VN; ++v) acc[r][v] = (VT)0;
            } else {
                UNROLL for (int r = 0; r < TM; ++r) UNROLL for (int v = 0; v < VN; ++v) acc[r][v] = VLOAD(cp + r * np + v * VW);
            }
            const __global T *b = Bp + ((long)jb * K + k0) * NR;
            for (int k = k0; k < k1;) {  // segments of k along one axis of A
                const int q = k / K2, k2 = k - q * K2;
                const int seg = (q + 1) * K2 < k1 ? (q + 1) * K2 : k1;
                const __global T *a = A + q * sak2 + k2 * sak;
                for (; k < seg; ++k) {
                    VT bv[VN];
                    UNROLL for (int v = 0; v < VN; ++v) bv[v] = VLOAD(b + v * VW);
                    UNROLL for (int r = 0; r < TM; ++r) {
                        const VT av = (VT)(a[arow[r]]);
                        UNROLL for (int v = 0; v < VN; ++v) acc[r][v] += av * bv[v];
                    }
                    a += sak;
                    b += NR;
                }
            }
            if (k1 < K || S > 1) {
                UNROLL for (int r = 0; r < TM; ++r) UNROLL for (int v = 0; v < VN; ++v) VSTORE(acc[r][v], cp + r * np + v * VW);
                continue;
            }
            __global T *c = C + i0 * ldc + j0;
            if (cols == NR) {
                UNROLL for (int r = 0; r < TM; ++r) {
                    if (r < rows) {
                        UNROLL for (int v = 0; v < VN; ++v) VSTORE(acc[r][v], c + r * ldc + v * VW);
                    }
                }
            } else {  // the last panel: lane by lane through a private copy
                UNROLL for (int r = 0; r < TM; ++r) {
                    if (r < rows) {
                        T lanes[NR];
                        UNROLL for (int v = 0; v < VN; ++v) *(VT_UNALIGNED *)(lanes + v * VW) = acc[r][v];
                        for (int j = 0; j < cols; ++j) c[r * ldc + j] = lanes[j];
                    }
                }
            }
        }
    }
}

// C[batch] = the sum of its S slices of P (each MP x NP, padded): after a split-k product.
__kernel void k_gemm_sum(const int M, const int N, const int S, const int MP, const int NP,
                         __global const T *P, __global T *C, const int offc, const int scb,
                         const int ldc) {
    const int j = get_global_id(0), i = get_global_id(1), batch = get_global_id(2);
    if (i >= M || j >= N) return;
    P += (long)batch * S * MP * NP + i * NP + j;
    T total = 0;
    for (int s = 0; s < S; ++s) total += P[(long)s * MP * NP];
    C[offc + batch * scb + i * ldc + j] = total;
}

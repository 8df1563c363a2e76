// Batched GEMM, C[b] = A[b] @ B[b], two designs chosen per device type.
//
// A is read through any strides (row stride sam, column stride sak), so a
// transposed A costs nothing; B must have unit column stride (ldb = row
// stride); C is written with row stride ldc. Batch b offsets each operand by
// its batch stride (0 broadcasts). k_gemm_nt_cpu instead reads B as an (N, K)
// matrix with unit k stride (and A with unit k stride). Host defines: T, and
// TM / VW / VN (CPU kernel; TN too for the NT kernel) or TS / WPT (GPU kernel).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define GEMM_ARGS const int M, const int N, const int K, \
    __global const T *A, const int offa, const int sab, const int sam, const int sak, \
    __global const T *B, const int offb, const int sbb, const int ldb, \
    __global T *C, const int offc, const int scb, const int ldc

#ifdef VW
// ---- CPU devices (PoCL): register blocks, no local memory, no builtin calls.
// NOTE: PoCL (at least the pip wheel's 3.0) links OpenCL builtins such as
// vload16, fma and min as real function calls, and every call spills the
// accumulators to the stack: 3-5x slower. So the hot loops use plain
// operators, unaligned vector loads through a 4-byte-aligned vector type, and
// fully unrolled loops over compile-time bounds (the accumulator arrays then
// live in registers). a * b + c is contracted to an FMA (FP_CONTRACT is on by
// default in OpenCL C).
#define VT CAT(T, VW)
typedef VT __attribute__((aligned(sizeof(T)))) VT_UNALIGNED;
#define VLOAD(p) (*(const __global VT_UNALIGNED *)(p))
#define VSTORE(v, p) (*(__global VT_UNALIGNED *)(p) = (v))
#define UNROLL _Pragma("unroll")
#define BW (VW * VN)  // columns of C per work-item

// NN: each work-item owns a TM x BW block of C in TM * VN vector registers; per
// k it loads VN vectors of row k of B and broadcasts TM scalars of A. Rows past
// M read a valid row (the first of the block) and are not stored; a block
// that runs past N takes the slower edge path (vectors, then scalars).
// The grid runs row blocks fastest (dimension 0): the work-items PoCL runs one after
// another share one panel of B (K x BW), which then stays in cache; with column blocks
// fastest every work-item streamed a new panel (1.1-1.8x slower per CPU second).
__kernel void k_gemm_cpu(GEMM_ARGS) {
    const int j0 = get_global_id(1) * BW;
    const int i0 = get_global_id(0) * TM;
    const int batch = get_global_id(2);
    if (i0 >= M || j0 >= N) return;
    A += offa + batch * sab;
    B += offb + batch * sbb;
    C += offc + batch * scb;
    const int rows = M - i0 < TM ? M - i0 : TM;
    int arow[TM];
    UNROLL for (int r = 0; r < TM; ++r) arow[r] = (r < rows ? i0 + r : i0) * sam;
    if (j0 + BW <= N) {
        VT acc[TM][VN];
        UNROLL for (int r = 0; r < TM; ++r) UNROLL for (int v = 0; v < VN; ++v) acc[r][v] = (VT)0;
        const __global T *b = B + j0;
        for (int k = 0; k < K; ++k) {
            VT bv[VN];
            UNROLL for (int v = 0; v < VN; ++v) bv[v] = VLOAD(b + v * VW);
            const int ak = k * sak;
            UNROLL for (int r = 0; r < TM; ++r) {
                const VT av = (VT)(A[arow[r] + ak]);
                UNROLL for (int v = 0; v < VN; ++v) acc[r][v] += av * bv[v];
            }
            b += ldb;
        }
        UNROLL for (int r = 0; r < TM; ++r) {
            if (r < rows) {
                UNROLL for (int v = 0; v < VN; ++v) VSTORE(acc[r][v], C + (i0 + r) * ldc + j0 + v * VW);
            }
        }
        return;
    }
    // edge block: whole vectors one at a time, then the last columns as scalars
    const int full = (N - j0) / VW;
    for (int r = 0; r < rows; ++r) {
        const __global T *a = A + arow[r];
        for (int v = 0; v < full; ++v) {
            VT acc = (VT)0;
            const __global T *b = B + j0 + v * VW;
            for (int k = 0; k < K; ++k) acc += (VT)(a[k * sak]) * VLOAD(b + k * ldb);
            VSTORE(acc, C + (i0 + r) * ldc + j0 + v * VW);
        }
        for (int c = j0 + full * VW; c < N; ++c) {
            T acc = 0;
            for (int k = 0; k < K; ++k) acc += a[k * sak] * B[k * ldb + c];
            C[(i0 + r) * ldc + c] = acc;
        }
    }
}

#ifdef KC
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
// 16-lane vectors (float16, see gemm_wide.py): without min_vector_width(512) PoCL's LLVM,
// which prefers 256-bit vectors, splits each into two 8-lane registers.
#if VW >= 16
#define WIDE __attribute__((min_vector_width(512)))
#else
#define WIDE
#endif

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

// B as the transposed im2col of a conv1d input x (N, C, L), without building it: row
// k = n * L_out + l, column j = c * KS + tap holds x[n, c, l * stride + tap * dilation -
// padding] (0 outside [0, L)); the columns of group g start at channel c0. A work-item
// packs rows [8 i, 8 i + 8) of one panel (fewer, longer work-items: PoCL's per-item cost
// dominated with one row each); rows whose window is inside x skip the bound checks.
inline void pack_im2col_row(const int k, const int p, const int NC, __global const T *x,
                            const int sxn, const int sxc, const int sxl, const int L,
                            const int L_out, const int KS, const int stride,
                            const int padding, const int dilation, const int K,
                            __global T *Bp) {
    const int n = k / L_out, l = k - n * L_out;
    const int base = l * stride - padding;
    __global T *dst = Bp + ((long)p * K + k) * NR;
    int ci = p * NR / KS, tap = p * NR - ci * KS;  // column j = ci * KS + tap, stepped
    const __global T *row = x + n * sxn + ci * sxc;
    if (base >= 0 && base + (KS - 1) * dilation < L && (p + 1) * NR <= NC) {
        row += base * sxl;
        UNROLL for (int c = 0; c < NR; ++c) {
            dst[c] = row[tap * dilation * sxl];
            if (++tap == KS) {
                tap = 0;
                row += sxc;
            }
        }
        return;
    }
    for (int c = 0; c < NR; ++c) {
        const int pos = base + tap * dilation;
        dst[c] = (p * NR + c < NC && pos >= 0 && pos < L) ? row[pos * sxl] : (T)0;
        if (++tap == KS) {
            tap = 0;
            row += sxc;
        }
    }
}

__kernel void k_pack_b_im2col(const int K, const int NC, __global const T *x, const int offx,
                              const int sxn, const int sxc, const int sxl, const int L,
                              const int L_out, const int KS, const int stride,
                              const int padding, const int dilation, const int c0,
                              __global T *Bp) {
    const int k0 = get_global_id(0) * 8, p = get_global_id(1);
    const int k1 = k0 + 8 < K ? k0 + 8 : K;
    for (int k = k0; k < k1; ++k)
        pack_im2col_row(k, p, NC, x + offx + c0 * sxc, sxn, sxc, sxl, L, L_out, KS, stride,
                        padding, dilation, K, Bp);
}

// B as the transposed im2col of a conv2d input x (N, C, H, W), as k_pack_b_im2col: row
// k = (n * OH + i) * OW + j, column c = (ci * KH + a) * KW + b holds x[n, c0 + ci,
// i * sh + a * dh - top, j * sw + b * dw - left] (0 outside x). A work-item packs rows
// [8 r, 8 r + 8) of one panel; the column walk (ci, a, b) is stepped, not divided, and
// rows whose window lies inside x skip the bound checks.
__kernel void k_pack_b_im2col2d(const int K, const int NC, __global const T *x,
                                const int offx, const int sxn, const int sxc, const int sxh,
                                const int sxw, const int H, const int W, const int OH,
                                const int OW, const int KH, const int KW, const int sh,
                                const int sw, const int top, const int left, const int dh,
                                const int dw, const int c0, __global T *Bp) {
    const int k0 = get_global_id(0) * 8, p = get_global_id(1);
    const int k1 = k0 + 8 < K ? k0 + 8 : K;
    const int taps = KH * KW;
    const int j0 = p * NR;
    const int ci0 = j0 / taps, a0 = (j0 - ci0 * taps) / KW, b0 = j0 - ci0 * taps - a0 * KW;
    const int full = j0 + NR <= NC;
    x += offx + c0 * sxc;
    for (int k = k0; k < k1; ++k) {
        const int n = k / (OH * OW), rem = k - n * (OH * OW);
        const int i = rem / OW, j = rem - i * OW;
        const int hb = i * sh - top, wb = j * sw - left;
        __global T *dst = Bp + ((long)p * K + k) * NR;
        const __global T *plane = x + n * sxn + ci0 * sxc;
        int a = a0, b = b0;
        if (full && hb >= 0 && hb + (KH - 1) * dh < H && wb >= 0 && wb + (KW - 1) * dw < W) {
            const __global T *base = plane + hb * sxh + wb * sxw;
            UNROLL for (int c = 0; c < NR; ++c) {
                dst[c] = base[a * dh * sxh + b * dw * sxw];
                if (++b == KW) {
                    b = 0;
                    if (++a == KH) {
                        a = 0;
                        base += sxc;
                    }
                }
            }
            continue;
        }
        for (int c = 0; c < NR; ++c) {
            const int h = hb + a * dh, w = wb + b * dw;
            dst[c] = (j0 + c < NC && h >= 0 && h < H && w >= 0 && w < W)
                         ? plane[h * sxh + w * sxw] : (T)0;
            if (++b == KW) {
                b = 0;
                if (++a == KH) {
                    a = 0;
                    plane += sxc;
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
#endif

#ifdef TN
// NT: C = A @ B^T with both read along k with unit stride (B given as its
// (N, K) matrix, row stride ldb): x @ W^T for a (out, in) weight, with no
// transposed copy. Each work-item owns TM x TN dot products, each a VW-lane
// vector accumulator summed across lanes at the end. Rows past M / columns
// past N read a valid row and are not stored.
#if VW == 16
#define HSUM(v) hsum8((v).lo + (v).hi)
#elif VW == 8
#define HSUM(v) hsum8(v)
#else
#define HSUM(v) hsum4(v)
#endif
#define hsum4(v) ((v).x + (v).y + (v).z + (v).w)
#define hsum8(v) hsum4((v).lo + (v).hi)

__kernel void k_gemm_nt_cpu(GEMM_ARGS) {
    const int j0 = get_global_id(0) * TN;
    const int i0 = get_global_id(1) * TM;
    const int batch = get_global_id(2);
    if (i0 >= M || j0 >= N) return;
    A += offa + batch * sab;
    B += offb + batch * sbb;
    C += offc + batch * scb;
    const int rows = M - i0 < TM ? M - i0 : TM;
    const int cols = N - j0 < TN ? N - j0 : TN;
    int arow[TM], brow[TN];
    UNROLL for (int r = 0; r < TM; ++r) arow[r] = (r < rows ? i0 + r : i0) * sam;
    UNROLL for (int c = 0; c < TN; ++c) brow[c] = (c < cols ? j0 + c : j0) * ldb;
    VT acc[TM][TN];
    UNROLL for (int r = 0; r < TM; ++r) UNROLL for (int c = 0; c < TN; ++c) acc[r][c] = (VT)0;
    const int k_vec = K - K % VW;
    for (int k = 0; k < k_vec; k += VW) {
        VT av[TM], bv[TN];
        UNROLL for (int r = 0; r < TM; ++r) av[r] = VLOAD(A + arow[r] + k);
        UNROLL for (int c = 0; c < TN; ++c) bv[c] = VLOAD(B + brow[c] + k);
        UNROLL for (int r = 0; r < TM; ++r) UNROLL for (int c = 0; c < TN; ++c) acc[r][c] += av[r] * bv[c];
    }
    UNROLL for (int r = 0; r < TM; ++r) {
        UNROLL for (int c = 0; c < TN; ++c) {
            T total = HSUM(acc[r][c]);
            for (int k = k_vec; k < K; ++k) total += A[arow[r] + k] * B[brow[c] + k];
            if (r < rows && c < cols) C[(i0 + r) * ldc + j0 + c] = total;
        }
    }
}
#endif
#endif

#ifdef TS
// ---- GPUs: TS x TS tiles of A and B staged in local memory; a work-group of
// TS x (TS / WPT) items, each computing WPT rows of one column of the C tile.
#define RTS (TS / WPT)

__kernel __attribute__((reqd_work_group_size(TS, RTS, 1)))
void k_gemm_tiled(GEMM_ARGS) {
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int col = get_group_id(0) * TS + lx;
    const int row0 = get_group_id(1) * TS;
    const int batch = get_global_id(2);
    A += offa + batch * sab;
    B += offb + batch * sbb;
    C += offc + batch * scb;
    __local T a_tile[TS][TS + 1];
    __local T b_tile[TS][TS];
    T acc[WPT];
    for (int w = 0; w < WPT; ++w) acc[w] = 0;
    for (int k0 = 0; k0 < K; k0 += TS) {
        for (int w = 0; w < WPT; ++w) {
            const int r = ly + w * RTS;
            const int ar = row0 + r, ak = k0 + lx;
            a_tile[r][lx] = (ar < M && ak < K) ? A[ar * sam + ak * sak] : 0;
            const int bk = k0 + r;
            b_tile[r][lx] = (bk < K && col < N) ? B[bk * ldb + col] : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) {
            const T b = b_tile[k][lx];
            for (int w = 0; w < WPT; ++w) acc[w] += a_tile[ly + w * RTS][k] * b;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w = 0; w < WPT; ++w) {
        const int row = row0 + ly + w * RTS;
        if (row < M && col < N) C[row * ldc + col] = acc[w];
    }
}
#endif

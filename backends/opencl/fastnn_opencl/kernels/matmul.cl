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
// 16-lane vectors (float16, see gemm_wide.py): without min_vector_width(512) PoCL's LLVM,
// which prefers 256-bit vectors, splits each into two 8-lane registers.
#if VW >= 16
#define WIDE __attribute__((min_vector_width(512)))
#else
#define WIDE
#endif

// NN: each work-item owns a TM x BW block of C in TM * VN vector registers; per
// k it loads VN vectors of row k of B and broadcasts TM scalars of A. Rows past
// M read a valid row (the first of the block) and are not stored; a block
// that runs past N takes the slower edge path (vectors, then scalars).
// The grid runs row blocks fastest (dimension 0): the work-items PoCL runs one after
// another share one panel of B (K x BW), which then stays in cache; with column blocks
// fastest every work-item streamed a new panel (1.1-1.8x slower per CPU second).
__kernel WIDE void k_gemm_cpu(GEMM_ARGS) {
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
#include "matmul_packed.cl"
#include "matmul_im2col.cl"
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

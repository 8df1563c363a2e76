// Batched GEMM, C[b] = A[b] @ B[b], two designs chosen per device type.
//
// A is read through any strides (row stride sam, column stride sak), so a
// transposed A costs nothing; B must have unit column stride (ldb = row
// stride); C is written with row stride ldc. Batch b offsets each operand by
// its batch stride (0 broadcasts). Host defines: T, and TM / VW (CPU kernel)
// or TS / WPT (GPU kernel).

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define GEMM_ARGS const int M, const int N, const int K, \
    __global const T *A, const int offa, const int sab, const int sam, const int sak, \
    __global const T *B, const int offb, const int sbb, const int ldb, \
    __global T *C, const int offc, const int scb, const int ldc

#ifdef VW
// ---- CPU devices (PoCL): register blocks, no local memory.
// Each work-item owns a TM x VW block of C held in TM vector registers; per k
// it loads one VW-wide row piece of B and broadcasts TM scalars of A. PoCL
// spills values across barriers, so local-memory tiles lose on a CPU.
#define VT CAT(T, VW)
#define VLOAD CAT(vload, VW)
#define VSTORE CAT(vstore, VW)

__kernel void k_gemm_cpu(GEMM_ARGS) {
    const int j0 = get_global_id(0) * VW;
    const int i0 = get_global_id(1) * TM;
    const int batch = get_global_id(2);
    if (i0 >= M || j0 >= N) return;
    A += offa + batch * sab;
    B += offb + batch * sbb;
    C += offc + batch * scb;
    if (i0 + TM <= M && j0 + VW <= N) {
        VT acc[TM];
        for (int r = 0; r < TM; ++r) acc[r] = (VT)0;
        const __global T *a_col = A + i0 * sam;
        for (int k = 0; k < K; ++k) {
            const VT b = VLOAD(0, B + k * ldb + j0);
            const __global T *a = a_col + k * sak;
            for (int r = 0; r < TM; ++r) acc[r] += (VT)(a[r * sam]) * b;
        }
        for (int r = 0; r < TM; ++r) VSTORE(acc[r], 0, C + (i0 + r) * ldc + j0);
        return;
    }
    // edge block: scalar, with bounds
    const int rows = min(TM, M - i0), cols = min(VW, N - j0);
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            T acc = 0;
            for (int k = 0; k < K; ++k) acc += A[(i0 + r) * sam + k * sak] * B[k * ldb + j0 + c];
            C[(i0 + r) * ldc + j0 + c] = acc;
        }
    }
}
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

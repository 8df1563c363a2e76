// Elementwise kernels: one program per (group, dtypes, input modes, rank).
//
// Host defines:
//   GROUP   1 unary (float), 2 unary (integer), 3 binary, 4 compare, 5 where, 6 astype
//   T0..T2  OpenCL types of the inputs, TO of the output, IS_FLOAT (1 for float/double)
//   MODE0..MODE2  how each input is read: 0 flat (contiguous, output's shape),
//                 1 strided (broadcast or transposed view), 2 a scalar kernel argument
//   NDIM    rank used by strided inputs (the shape is passed reversed: s0 = last axis)
// The output is always a fresh contiguous array of n elements.

#ifndef MODE1
#define MODE1 3
#endif
#ifndef MODE2
#define MODE2 3
#endif

// ---- argument lists per mode (3 = input absent)
#define ARG_0(k, T) , __global const T *x##k, const int off##k
#define ARG_1(k, T) , __global const T *x##k, const int off##k, const int8 st##k
#define ARG_2(k, T) , const T s##k
#define ARG_3(k, T)
#define ARGS_(m, k, T) ARG_##m(k, T)
#define ARGS(m, k, T) ARGS_(m, k, T)

#if MODE0 == 1
#define ADV0(cc, c) o0 += (cc) * st0.c;
#else
#define ADV0(cc, c)
#endif
#if MODE1 == 1
#define ADV1(cc, c) o1 += (cc) * st1.c;
#else
#define ADV1(cc, c)
#endif
#if MODE2 == 1
#define ADV2(cc, c) o2 += (cc) * st2.c;
#else
#define ADV2(cc, c)
#endif

#define STEP(c) { int q = rem / shp.c; int cc = rem - q * shp.c; rem = q; \
                  ADV0(cc, c) ADV1(cc, c) ADV2(cc, c) }

#if MODE0 == 0 || MODE0 == 1
#define INIT0 int o0 = off0;
#else
#define INIT0
#endif
#if MODE1 == 0 || MODE1 == 1
#define INIT1 int o1 = off1;
#else
#define INIT1
#endif
#if MODE2 == 0 || MODE2 == 1
#define INIT2 int o2 = off2;
#else
#define INIT2
#endif

#define LOAD_0(k) x##k[o##k + i]
#define LOAD_1(k) x##k[o##k]
#define LOAD_2(k) s##k
#define LOAD_(m, k) LOAD_##m(k)
#define LOAD(m, k) LOAD_(m, k)

// Computes the strided offsets o0..o2 of element i.
#define INDEX \
    INIT0 INIT1 INIT2 \
    int rem = i; \
    IDX_STEPS

#if NDIM == 0
#define IDX_STEPS
#elif NDIM == 1
#define IDX_STEPS STEP(s0)
#elif NDIM == 2
#define IDX_STEPS STEP(s0) STEP(s1)
#elif NDIM == 3
#define IDX_STEPS STEP(s0) STEP(s1) STEP(s2)
#elif NDIM == 4
#define IDX_STEPS STEP(s0) STEP(s1) STEP(s2) STEP(s3)
#elif NDIM == 5
#define IDX_STEPS STEP(s0) STEP(s1) STEP(s2) STEP(s3) STEP(s4)
#elif NDIM == 6
#define IDX_STEPS STEP(s0) STEP(s1) STEP(s2) STEP(s3) STEP(s4) STEP(s5)
#elif NDIM == 7
#define IDX_STEPS STEP(s0) STEP(s1) STEP(s2) STEP(s3) STEP(s4) STEP(s5) STEP(s6)
#else
#define IDX_STEPS STEP(s0) STEP(s1) STEP(s2) STEP(s3) STEP(s4) STEP(s5) STEP(s6) STEP(s7)
#endif

#if GRID
// GRID: the (at most 3) collapsed axes are the NDRange's, so no element divides its index
// (PoCL runs an integer division per axis and element unvectorised: 10x a flat launch).
// A work-item runs CHUNK consecutive elements of the fastest axis (dimension 0 of the
// NDRange counts chunks): one element per work-item cost PoCL 3.1 7-12x a flat launch
// (a conv's bias add over 800k floats: 1.0-1.3 ms against 0.13).
#if MODE0 == 1
#ifndef FS0
#define FS0 st0.s0
#endif
#define GADV0 o0 += c0 * FS0 + c1 * st0.s1 + c2 * st0.s2;
#else
#define GADV0
#endif
#if MODE1 == 1
#ifndef FS1
#define FS1 st1.s0
#endif
#define GADV1 o1 += c0 * FS1 + c1 * st1.s1 + c2 * st1.s2;
#else
#define GADV1
#endif
#if MODE2 == 1
#ifndef FS2
#define FS2 st2.s0
#endif
#define GADV2 o2 += c0 * FS2 + c1 * st2.s1 + c2 * st2.s2;
#else
#define GADV2
#endif
#define GPASS_0(k) , x##k, off##k
#define GPASS_1(k) , x##k, off##k, st##k
#define GPASS_2(k) , s##k
#define GPASS_3(k)
#define GPASSES_(m, k) GPASS_##m(k)
#define GPASSES(m, k) GPASSES_(m, k)
#define HEAD(name) \
    inline void name##_at(const int c0, const int c1, const int c2, const int i, \
        __global TO *out ARGS(MODE0, 0, T0) ARGS(MODE1, 1, T1) ARGS(MODE2, 2, T2), \
        const TO p); \
    __kernel void name(__global TO *out, const int n, const int8 shp \
        ARGS(MODE0, 0, T0) ARGS(MODE1, 1, T1) ARGS(MODE2, 2, T2), const TO p) { \
        const int c1 = get_global_id(1), c2 = get_global_id(2); \
        const int first = get_global_id(0) * CHUNK; \
        const int last = shp.s0 - first < CHUNK ? shp.s0 : first + CHUNK; \
        const int row = (c2 * shp.s1 + c1) * shp.s0; \
        (void)n; \
        for (int c0 = first; c0 < last; ++c0) \
            name##_at(c0, c1, c2, row + c0, out GPASSES(MODE0, 0) GPASSES(MODE1, 1) \
                      GPASSES(MODE2, 2), p); \
    } \
    inline void name##_at(const int c0, const int c1, const int c2, const int i, \
        __global TO *out ARGS(MODE0, 0, T0) ARGS(MODE1, 1, T1) ARGS(MODE2, 2, T2), \
        const TO p) { \
    (void)p; \
    INIT0 INIT1 INIT2 GADV0 GADV1 GADV2
#else
// Flat and strided launches: each work-item runs CHUNK consecutive elements (the host
// launches ceil(n / CHUNK) work-items). One element per work-item cost PoCL 2-9x more
// (a 2x2-pooled CNN's where: 3.6 -> 0.4 ms over 800k floats). The op's body becomes an
// inline function of the element index, called in the kernel's loop.
#define PASS_0(k) , x##k, off##k
#define PASS_1(k) , x##k, off##k, st##k
#define PASS_2(k) , s##k
#define PASS_3(k)
#define PASSES_(m, k) PASS_##m(k)
#define PASSES(m, k) PASSES_(m, k)
#define HEAD(name) \
    inline void name##_at(const int i, __global TO *out, const int8 shp \
        ARGS(MODE0, 0, T0) ARGS(MODE1, 1, T1) ARGS(MODE2, 2, T2), const TO p); \
    __kernel void name(__global TO *out, const int n, const int8 shp \
        ARGS(MODE0, 0, T0) ARGS(MODE1, 1, T1) ARGS(MODE2, 2, T2), const TO p) { \
        const int i0 = get_global_id(0) * CHUNK; \
        const int i1 = n - i0 < CHUNK ? n : i0 + CHUNK; \
        for (int i = i0; i < i1; ++i) \
            name##_at(i, out, shp PASSES(MODE0, 0) PASSES(MODE1, 1) PASSES(MODE2, 2), p); \
    } \
    inline void name##_at(const int i, __global TO *out, const int8 shp \
        ARGS(MODE0, 0, T0) ARGS(MODE1, 1, T1) ARGS(MODE2, 2, T2), const TO p) { \
    (void)p; (void)shp; \
    INDEX
#endif

// ---- unary: y = f(x), x of type T0 == TO
#define UNARY(name, expr) HEAD(name) \
    const TO x = LOAD(MODE0, 0); \
    out[i] = (expr); }

#if GROUP == 1
UNARY(k_copy, x)
UNARY(k_neg, -x)
UNARY(k_exp, exp(x))
UNARY(k_log, log(x))
UNARY(k_sqrt, sqrt(x))
UNARY(k_abs, fabs(x))
UNARY(k_sign, isnan(x) ? x : (TO)((x > 0) - (x < 0)))
UNARY(k_erf, erf(x))
UNARY(k_tanh, SAFE_TANH(x, TO))
UNARY(k_sigmoid, SIGMOID(x, TO))
UNARY(k_relu, x < 0 ? (TO)0 : x)
UNARY(k_leaky_relu, x > 0 ? x : p * x)
UNARY(k_gelu, GELU(x, TO))
UNARY(k_silu, x * SIGMOID(x, TO))
UNARY(k_softplus, SOFTPLUS(x, TO))
UNARY(k_floor, floor(x))
UNARY(k_sin, sin(x))
UNARY(k_cos, cos(x))
#endif

#if GROUP == 2
UNARY(k_copy, x)
UNARY(k_neg, -x)
UNARY(k_abs, x < 0 ? -x : x)
UNARY(k_sign, (TO)((x > 0) - (x < 0)))
UNARY(k_relu, x < 0 ? (TO)0 : x)
#endif

// ---- binary: y = f(a, b), same type
#define BINARY(name, expr) HEAD(name) \
    const T0 a = LOAD(MODE0, 0); \
    const T1 b = LOAD(MODE1, 1); \
    out[i] = (expr); }

#if GROUP == 3
BINARY(k_add, a + b)
BINARY(k_sub, a - b)
BINARY(k_mul, a * b)
#if IS_FLOAT
BINARY(k_div, a / b)
BINARY(k_pow, pow(a, b))
BINARY(k_maximum, (isnan(a) || isnan(b)) ? a + b : fmax(a, b))
BINARY(k_minimum, (isnan(a) || isnan(b)) ? a + b : fmin(a, b))
#else
BINARY(k_div, b == 0 ? 0 : a / b)
BINARY(k_maximum, a > b ? a : b)
BINARY(k_minimum, a < b ? a : b)
#ifdef UT
// a ** b for integers: repeated squaring in the unsigned type UT, which wraps as
// NumPy's integer power does. For b < 0 (NumPy refuses, PyTorch truncates 1 / a**|b|)
// 1 ** b is 1, (-1) ** b is -1 for odd b and 1 for even b, every other base 0.
inline T0 int_pow(const T0 a, const T0 b) {
    // ((T0)-1: only a signed T0 gets here, and uchar's -1 would be a constant compare)
    if (b < 0) return a == 1 ? (T0)1 : a == (T0)-1 ? ((b & 1) ? (T0)-1 : (T0)1) : (T0)0;
    UT base = (UT)a, result = 1, e = (UT)b;
    for (; e; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
    }
    return (T0)result;
}
BINARY(k_pow, int_pow(a, b))
#endif
// floor division as NumPy: C truncates toward 0, so step down when the signs differ
// and the division is inexact; x // 0 is 0
BINARY(k_floor_divide, b == 0 ? (TO)0 : (TO)(a / b - ((a % b != 0) && ((a < 0) != (b < 0)))))
BINARY(k_bitwise_and, a & b)
BINARY(k_bitwise_or, a | b)
BINARY(k_bitwise_xor, a ^ b)
#endif
#endif

#if GROUP == 4
BINARY(k_greater, (uchar)(a > b))
BINARY(k_less, (uchar)(a < b))
BINARY(k_equal, (uchar)(a == b))
#endif

#if GROUP == 5
HEAD(k_where)
    const T0 c = LOAD(MODE0, 0);
    const T1 a = LOAD(MODE1, 1);
    const T2 b = LOAD(MODE2, 2);
    out[i] = c ? a : b;
}
#endif

#if GROUP == 6
HEAD(k_astype)
    const T0 x = LOAD(MODE0, 0);
#if TO_BOOL
    out[i] = (uchar)(x != 0);
#elif VIA_INT
    out[i] = (TO)(int)x;
#else
    out[i] = (TO)x;
#endif
}
#endif

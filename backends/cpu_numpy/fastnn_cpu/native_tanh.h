/* float32 tanh, branch-free so that the loops calling it vectorise (fastnn_cpu.native's
 * recurrent loops and GELU): Cephes' odd polynomial below 0.625, 1 - 2 / (exp(2|x|) + 1)
 * above, within 1.3 ulp of float64's tanh (tests/backends/cpu/test_cpu_native_recurrent.py);
 * NaN, +-inf and -0.0 kept. */

#include <math.h>
#include <stdint.h>
#include <string.h>

/* exp(x) for x in [-87, 88] (Cephes' expf: x = n ln 2 + r, a degree-6 polynomial in r, times
 * 2^n from its bits), branch-free so that the loops below vectorise. */
static inline float exp_small(float x) {
    float n = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

/* exp(y) for y <= 0 (a softmax's shifted scores, the normal pdf's -x^2 / 2): exp_small
 * clamped at -87 (2^-126's exponent) and 0 below it (float32's exp is under 1e-38
 * there), NaN passed on (the clamp takes NaN to -87, so exp_small never sees one). */
static inline float exp_nonpositive(float y) {
    float e = exp_small(y > -87.0f ? y : -87.0f);
    e = y < -87.0f ? 0.0f : e;
    return y != y ? y : e;
}

/* tanh in float32 to a few ulps: Cephes' odd polynomial below |x| 0.625 (small x keep
 * their relative accuracy), 1 - 2 / (e^{2|x|} + 1) with x's sign above it (at |x| > 20
 * exactly +-1, as float32's tanh from |x| ~9), NaN and +-0.0 passed on. */
static inline float tanh_f(float x) {
    float ax = fabsf(x);
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = p * z * x + x;
    float e = exp_small(ax < 20.0f ? 2.0f * ax : 40.0f);
    float large = copysignf(1.0f - 2.0f / (e + 1.0f), x);
    float r = ax < 0.625f ? small : large;
    return x != x || x == 0.0f ? x : r; /* (x + (-0.0) would be +0.0) */
}

// Prepended to every program. Activations shared by elementwise.cl and fused.cl,
// written as macros over the value type T_ so they serve float and double.

#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// NOTE: PoCL's tanh saturates at +-0.99999994, so sigmoid(-1e30) would be 3e-8
// and silu(-1e30) = -3e22. tanh rounds to +-1 beyond |x| = 23 in double already.
#define SAFE_TANH(x, T_) (fabs(x) > (T_)23 ? copysign((T_)1, (x)) : tanh(x))
// 1 / (1 + e^-x) on the side where e^-x cannot overflow.
#define SIGMOID(x, T_) ((x) >= 0 ? (T_)1 / ((T_)1 + exp(-(x))) : exp(x) / ((T_)1 + exp(x)))
#define GELU(x, T_) ((T_)0.5 * (x) * ((T_)1 + erf((x) * (T_)M_SQRT1_2)))
#define SOFTPLUS(x, T_) (fmax((x), (T_)0) + log1p(exp(-fabs(x))))

// Adadelta, Adamax, ASGD and Rprop for many parameters in ONE launch (PyTorch's rules;
// hook docstrings in fastnn/api/hookspec_optim.py). The launch layout is optim.cu's.

#include "step_table.cuh"

// sign(x) with NaN kept (as torch.sign).
template <typename T>
__device__ __forceinline__ T sign_of(T x) {
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
}

// Adadelta (ptr[2] = square_avg v, ptr[3] = acc_delta u): g += wd p;
// v = rho v + (1-rho) g^2; delta = sqrt(u+eps) / sqrt(v+eps) g; u = rho u + (1-rho) delta^2.
template <typename T>
__device__ void adadelta_body(const StepTable& t, double rho, double eps) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* v = (T*)t.ptr[2][s.k];
    T* u = (T*)t.ptr[3][s.k];
    const T lr = T(t.lr[s.k]), wd = T(t.wd[s.k]), r = T(rho), e = T(eps);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i];
        if (wd != T(0)) d += wd * p[i];
        const T vi = r * v[i] + (T(1) - r) * d * d;
        v[i] = vi;
        const T delta = f_sqrt(u[i] + e) / f_sqrt(vi + e) * d;
        u[i] = r * u[i] + (T(1) - r) * delta * delta;
        p[i] -= lr * delta;
    }
}

// Adamax (ptr[2] = exp_avg m, ptr[3] = exp_inf u): m = lerp(m, g, w) with w = 1 - beta1;
// u = max(beta2 u, |g| + eps), NaN kept; p -= (lr / bias1) m / u.
template <typename T>
__device__ void adamax_body(const StepTable& t, double w, double beta2, double eps,
                            double bias1) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* m = (T*)t.ptr[2][s.k];
    T* u = (T*)t.ptr[3][s.k];
    const T wd = T(t.wd[s.k]), wt = T(w), b2 = T(beta2), e = T(eps);
    const T step_size = T(t.lr[s.k] / bias1);
    const bool low = w < 0.5;
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i];
        if (wd != T(0)) d += wd * p[i];
        const T mi = low ? m[i] + wt * (d - m[i]) : d - (d - m[i]) * (T(1) - wt);
        m[i] = mi;
        const T a = b2 * u[i], b = f_abs(d) + e;
        const T ui = (a > b || a != a) ? a : b;
        u[i] = ui;
        p[i] -= step_size * (mi / ui);
    }
}

// ASGD (ptr[2] = ax; lr = this parameter's eta): g += wd p; p = p (1 - lambd eta) - eta g;
// ax = p (copy = 1) or ax + mu (p - ax).
template <typename T>
__device__ void asgd_body(const StepTable& t, double lambd, double mu, i64 copy) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* ax = (T*)t.ptr[2][s.k];
    const double eta_d = t.lr[s.k];
    const T eta = T(eta_d), wd = T(t.wd[s.k]), keep = T(1.0 - lambd * eta_d), m = T(mu);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i];
        if (wd != T(0)) d += wd * p[i];
        const T w = p[i] * keep - eta * d;
        p[i] = w;
        ax[i] = copy ? w : ax[i] + (w - ax[i]) * m;
    }
}

// Rprop (ptr[2] = prev, ptr[3] = step_size): s = sign(g prev); step *= etaplus (s > 0),
// etaminus (s < 0), 1 (s == 0), clamped to [lo, hi] with NaN kept; g = 0 where s < 0;
// p -= sign(g) step; prev = g.
template <typename T>
__device__ void rprop_body(const StepTable& t, double etaminus, double etaplus, double lo,
                           double hi) {
    const TensorSlice s = my_slice(t);
    T* p = (T*)t.ptr[0][s.k];
    const T* g = (const T*)t.ptr[1][s.k];
    T* prev = (T*)t.ptr[2][s.k];
    T* size = (T*)t.ptr[3][s.k];
    const T minus = T(etaminus), plus = T(etaplus), low = T(lo), high = T(hi);
    for (i64 i = s.first; i < t.size[s.k]; i += s.stride) {
        T d = g[i];
        const T sg = sign_of(d * prev[i]);
        const T f = sg > T(0) ? plus : (sg < T(0) ? minus : (sg == T(0) ? T(1) : sg));
        T z = size[i] * f;
        z = z < low ? low : z;
        z = z > high ? high : z;
        size[i] = z;
        if (sg < T(0)) d = T(0);
        p[i] -= sign_of(d) * z;
        prev[i] = d;
    }
}

#define FASTNN_OPTIM_MORE(T, SUFFIX)                                                      \
    extern "C" __global__ void adadelta_step_##SUFFIX(const StepTable table, double rho,  \
                                                      double eps) {                      \
        adadelta_body<T>(table, rho, eps);                                               \
    }                                                                                    \
    extern "C" __global__ void adamax_step_##SUFFIX(const StepTable table, double w,      \
                                                    double beta2, double eps,            \
                                                    double bias1) {                      \
        adamax_body<T>(table, w, beta2, eps, bias1);                                     \
    }                                                                                    \
    extern "C" __global__ void asgd_step_##SUFFIX(const StepTable table, double lambd,    \
                                                  double mu, i64 copy) {                 \
        asgd_body<T>(table, lambd, mu, copy);                                            \
    }                                                                                    \
    extern "C" __global__ void rprop_step_##SUFFIX(const StepTable table, double etaminus, \
                                                   double etaplus, double lo, double hi) { \
        rprop_body<T>(table, etaminus, etaplus, lo, hi);                                 \
    }

FASTNN_INSTANTIATE(FASTNN_OPTIM_MORE)

// Host/device portability for the shared pointwise formulas (kernels/math/*.hpp).
//
// DIVCHECK_HD marks a function __host__ __device__ under nvcc and is empty under g++, so the
// same inline formula is compiled into the CPU backend and into CUDA kernels. The f_* wrappers
// select the float32 overload of each elementary function: CUDA's device functions on the
// device, the std:: float overloads on the host. Nothing here throws or allocates.
#pragma once

#if defined(__CUDACC__)
#define DIVCHECK_HD __host__ __device__
#else
#define DIVCHECK_HD
#endif

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace divcheck::math {

inline constexpr float kInf = __builtin_huge_valf();
inline constexpr float kFloatMax = 3.40282346638528859811704183484516925e+38f;  // FLT_MAX
inline constexpr float kFloatMinNormal = 1.17549435082228750796873653722224568e-38f;  // FLT_MIN
inline constexpr float kLn2 = 0.693147180559945309417232121458176568f;  // rounds to 0x3f317218

#if defined(__CUDA_ARCH__)
DIVCHECK_HD inline float f_exp(float x) { return ::expf(x); }
DIVCHECK_HD inline float f_log(float x) { return ::logf(x); }
DIVCHECK_HD inline float f_sqrt(float x) { return ::sqrtf(x); }
DIVCHECK_HD inline float f_abs(float x) { return ::fabsf(x); }
DIVCHECK_HD inline float f_tanh(float x) { return ::tanhf(x); }
#else
DIVCHECK_HD inline float f_exp(float x) { return std::exp(x); }
DIVCHECK_HD inline float f_log(float x) { return std::log(x); }
DIVCHECK_HD inline float f_sqrt(float x) { return std::sqrt(x); }
DIVCHECK_HD inline float f_abs(float x) { return std::fabs(x); }
DIVCHECK_HD inline float f_tanh(float x) { return std::tanh(x); }
#endif

// The softmax exponential exp(x) of a shifted logit or a log-probability (x <= 0, or -inf).
// Device: ex2.approx.f32 of x log2(e): one multiply (rounding x log2(e) costs a relative error
// of at most u |x| in the result) and the MUFU.EX2 (relative error <= 2^-22, subnormal results
// kept, exp(0) = 1 and exp(-inf) = +0 exactly): 3 instructions instead of expf's 8. The
// tolerance model covers it (docs/tolerances.md, "c per row"): every probability's scale
// already carries 2|lp| + 2 units, multiplied by c = 8. Host: the C library's expf.
// f_softmax_exp_ftz may flush results below 2^-126 to +0 (ex2.approx.ftz, one instruction less):
// only for the summands of the fixed-point normaliser (exact_sum.hpp), which truncates
// everything below 2^-40 to 0 anyway, so the flush changes no bit of S.
inline constexpr float kLog2e = 1.44269504088896340736f;  // rounds to 0x3fb8aa3b
inline constexpr float kHalfLog2e = 0.72134752044448170368f;  // kLog2e / 2, exactly

#if defined(__CUDA_ARCH__)
template <bool kFlushSubnormals>
__device__ inline float ex2_approx(float a) {
  float y;
  if constexpr (kFlushSubnormals) asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(a));
  else asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(a));
  return y;
}
DIVCHECK_HD inline float f_softmax_exp(float x) { return ex2_approx<false>(x * kLog2e); }
DIVCHECK_HD inline float f_softmax_exp_ftz(float x) { return ex2_approx<true>(x * kLog2e); }
// exp(x / 2) and exp((a + b) / 2) as f_softmax_exp(0.5f * x) and f_softmax_exp(0.5f * (a + b))
// with the halving folded into the multiply by log2(e): (s / 2)·L and s·(L / 2) are the same real
// number (L / 2 is exact), so the same float unless s / 2 is subnormal, where both exponentials
// are 1. One multiply fewer (Hellinger's sqrt(p) and its one-pass terms).
DIVCHECK_HD inline float f_softmax_exp_half(float x) { return ex2_approx<false>(x * kHalfLog2e); }
DIVCHECK_HD inline float f_softmax_exp_half_ftz(float x) { return ex2_approx<true>(x * kHalfLog2e); }
DIVCHECK_HD inline float f_softmax_exp_half_sum(float a, float b) { return ex2_approx<false>((a + b) * kHalfLog2e); }
DIVCHECK_HD inline float f_softmax_exp_half_sum_ftz(float a, float b) { return ex2_approx<true>((a + b) * kHalfLog2e); }
#else
DIVCHECK_HD inline float f_softmax_exp(float x) { return std::exp(x); }
DIVCHECK_HD inline float f_softmax_exp_ftz(float x) { return std::exp(x); }
DIVCHECK_HD inline float f_softmax_exp_half(float x) { return std::exp(0.5f * x); }
DIVCHECK_HD inline float f_softmax_exp_half_ftz(float x) { return std::exp(0.5f * x); }
DIVCHECK_HD inline float f_softmax_exp_half_sum(float a, float b) { return std::exp(0.5f * (a + b)); }
DIVCHECK_HD inline float f_softmax_exp_half_sum_ftz(float a, float b) { return std::exp(0.5f * (a + b)); }
#endif

// 2^x of an exponent the caller formed (x <= 0, finite: the tame gradient forms of kl.hpp and
// cross_entropy.hpp, whose exponent is one fma of the shifted logit), and that fma. Device:
// ex2.approx.ftz (relative error <= 2^-22, results below 2^-126 flushed to +0, as
// f_softmax_exp_ftz) and fma.rn; host (the kernel emulator): std::exp2 and std::fma.
#if defined(__CUDA_ARCH__)
DIVCHECK_HD inline float f_exp2_ftz(float x) { return ex2_approx<true>(x); }
DIVCHECK_HD inline float f_fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
#else
DIVCHECK_HD inline float f_exp2_ftz(float x) { return std::exp2(x); }
DIVCHECK_HD inline float f_fma(float a, float b, float c) { return std::fma(a, b, c); }
#endif

// exp(t - log S) of a tame shifted logit t by one fma (the tame forms of kl.hpp, cross_entropy.hpp
// and softmax.hpp softmax_column_tame_folded): 2^fma(t, log2(e), c) with c = -log S * log2(e),
// tame_exp2_offset, rounded once per row and side (docs/tolerances.md, "Tame gradient forms").
DIVCHECK_HD inline float tame_exp2_offset(float log_s) { return -log_s * kLog2e; }
DIVCHECK_HD inline float tame_prob_from_shifted(float t, float c) { return f_exp2_ftz(f_fma(t, kLog2e, c)); }
// sqrt(exp(t - log S)) the same way, 2^fma(t, log2(e)/2, c/2): exactly half of
// tame_prob_from_shifted's exponent (log2(e)/2 and c/2 are exact halvings, and so is the fma's
// rounded result: it is a normal float), so its square is that probability up to the exponential's
// and the product's roundings (Hellinger's tame columns, softmax.hpp softmax_column_tame_roots).
DIVCHECK_HD inline float tame_root_from_shifted(float t, float c) { return f_exp2_ftz(f_fma(t, kHalfLog2e, 0.5f * c)); }

// A fast log for arguments in [FLT_MIN, 2]: the probability path's log p (softmax.hpp
// prob_path_from_shifted; below FLT_MIN that path takes the log-softmax value instead) and
// Jensen-Shannon's log(1 + exp(-a)) (jensen_shannon.hpp). Device: lg2.approx.ftz.f32 times ln 2
// (MUFU.LG2 and one multiply: 2 instructions instead of logf's ~15; the ftz form, as no
// subnormal argument reaches it). Its error against ln x, bounded from the CUDA Programming
// Guide's __log2f accuracy (2^-22 absolute on [1/2, 2], 2 ulp elsewhere) and the product's
// rounding: <= 4 ln 2 + |ln x| <= 3.48 u on [1/2, 2], <= 5 u |ln x| below 1/2 (u = 2^-24);
// measured on the H200 over every float in [FLT_MIN, 2] (tests/cuda/tame_test.cpp), with
// log 1 = +0 and log 2 = ln 2 (the float) exactly. docs/tolerances.md ("The probability path",
// and "c per row" for Jensen-Shannon) shows the scales cover it with the factor c. Host: the C
// library's logf.
#if defined(__CUDA_ARCH__)
DIVCHECK_HD inline float f_fast_log(float x) {
  float l2;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(l2) : "f"(x));
  return l2 * kLn2;
}
#else
DIVCHECK_HD inline float f_fast_log(float x) { return std::log(x); }
#endif

// a / b by the fast reciprocal (rcp.approx.ftz, <= 1 ulp, and one multiply: 2 instructions
// instead of the IEEE division's ~8 and its slow path) for normal b; the host divides. Used where
// the quotient only needs to be close (kernels/math/jefferys_centred.hpp: a record's centre).
#if defined(__CUDA_ARCH__)
DIVCHECK_HD inline float f_fast_div(float a, float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return a * r;
}
#else
DIVCHECK_HD inline float f_fast_div(float a, float b) { return a / b; }
#endif

// sqrt(x) by the fast square root (sqrt.approx.ftz: relative error <= 2^-23, one MUFU operation
// instead of the IEEE square root's ~10 instructions) for normal x >= 0; the host's std::sqrt. Used
// where the root only needs to be close (kernels/math/hellinger_centred.hpp: a record's centre).
#if defined(__CUDA_ARCH__)
DIVCHECK_HD inline float f_fast_sqrt(float x) {
  float r;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
#else
DIVCHECK_HD inline float f_fast_sqrt(float x) { return std::sqrt(x); }
#endif

// Pairwise sum of N = 2^j terms (((t0 + t1) + (t2 + t3)) + ...), the chunks' order (the centred
// records, jefferys_centred.hpp and hellinger_centred.hpp).
template <int N>
DIVCHECK_HD inline float pairwise_sum(const float* t) {
  if constexpr (N == 1) {
    return t[0];
  } else {
    return pairwise_sum<N / 2>(t) + pairwise_sum<N / 2>(t + N / 2);
  }
}

// NaN test that survives -ffast-math-free builds on both compilers (x != x).
DIVCHECK_HD inline bool is_nan(float x) { return x != x; }

}  // namespace divcheck::math

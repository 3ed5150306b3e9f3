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
DIVCHECK_HD inline float f_log1p(float x) { return ::log1pf(x); }
DIVCHECK_HD inline float f_expm1(float x) { return ::expm1f(x); }
DIVCHECK_HD inline float f_sqrt(float x) { return ::sqrtf(x); }
DIVCHECK_HD inline float f_abs(float x) { return ::fabsf(x); }
DIVCHECK_HD inline float f_tanh(float x) { return ::tanhf(x); }
#else
DIVCHECK_HD inline float f_exp(float x) { return std::exp(x); }
DIVCHECK_HD inline float f_log(float x) { return std::log(x); }
DIVCHECK_HD inline float f_log1p(float x) { return std::log1p(x); }
DIVCHECK_HD inline float f_expm1(float x) { return std::expm1(x); }
DIVCHECK_HD inline float f_sqrt(float x) { return std::sqrt(x); }
DIVCHECK_HD inline float f_abs(float x) { return std::fabs(x); }
DIVCHECK_HD inline float f_tanh(float x) { return std::tanh(x); }
#endif

// NaN test that survives -ffast-math-free builds on both compilers (x != x).
DIVCHECK_HD inline bool is_nan(float x) { return x != x; }

}  // namespace divcheck::math

// The emulator's stand-in for <cuda_fp16.h>: float16 as its 16-bit pattern, converted exactly
// (widening) and with one round-to-nearest-even (narrowing) by core/dtype.hpp.
#pragma once

#include "core/dtype.hpp"

struct __half {
  unsigned short bits;
};
inline float __half2float(__half h) { return divcheck::f16_to_float(h.bits); }
inline __half __float2half_rn(float v) { return {divcheck::float_to_f16(v)}; }
inline __half __ushort_as_half(unsigned short b) { return {b}; }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }

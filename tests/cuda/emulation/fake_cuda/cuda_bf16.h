// The emulator's stand-in for <cuda_bf16.h>: bfloat16 as its 16-bit pattern, converted exactly
// (widening) and with one round-to-nearest-even (narrowing) by core/dtype.hpp, as the
// intrinsics do (NaN payloads aside).
#pragma once

#include "core/dtype.hpp"

struct __nv_bfloat16 {
  unsigned short bits;
};
inline float __bfloat162float(__nv_bfloat16 h) { return divcheck::bf16_to_float(h.bits); }
inline __nv_bfloat16 __float2bfloat16_rn(float v) { return {divcheck::float_to_bf16(v)}; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return {b}; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }

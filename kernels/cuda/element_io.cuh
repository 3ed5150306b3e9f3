// Element access of the CUDA kernels: the three input element types (float, __nv_bfloat16,
// __half), their exact widening to float, the one rounding back (round to nearest, ties to
// even; cuda_bf16.h / cuda_fp16.h intrinsics: subnormals kept, overflow to +-inf), and the
// 16-byte chunk (uint4) view used for vectorised global loads and stores.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace divcheck::cuda {

template <class Elem>
struct ElemIo;

template <>
struct ElemIo<float> {
  static __device__ __forceinline__ float to_float(float e) { return e; }
  static __device__ __forceinline__ float from_float(float v) { return v; }
  static __device__ __forceinline__ float from_bits(uint32_t b) { return __uint_as_float(b); }
  static __device__ __forceinline__ uint32_t bits_of(float v) { return __float_as_uint(v); }
};
template <>
struct ElemIo<__nv_bfloat16> {
  static __device__ __forceinline__ float to_float(__nv_bfloat16 e) { return __bfloat162float(e); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ float from_bits(uint32_t b) {
    return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(b)));
  }
  static __device__ __forceinline__ uint32_t bits_of(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};
template <>
struct ElemIo<__half> {
  static __device__ __forceinline__ float to_float(__half e) { return __half2float(e); }
  static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ float from_bits(uint32_t b) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
  }
  static __device__ __forceinline__ uint32_t bits_of(float v) { return __half_as_ushort(__float2half_rn(v)); }
};

template <class Elem>
__device__ __forceinline__ float load_float(const Elem* p) {
  return ElemIo<Elem>::to_float(*p);
}
template <class Elem>
__device__ __forceinline__ void store_float(Elem* p, float v) {
  *p = ElemIo<Elem>::from_float(v);
}

// A 16-byte chunk holds kVec elements; element k of a chunk read from address a is the element
// at a + k (little-endian words, the low half of a word first).
template <class Elem>
inline constexpr int kVec = 16 / static_cast<int>(sizeof(Elem));

template <class Elem>
__device__ __forceinline__ float chunk_get(const uint4& c, int k) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(&c);
  if constexpr (sizeof(Elem) == 4) {
    return ElemIo<Elem>::from_bits(w[k]);
  } else {
    return ElemIo<Elem>::from_bits((w[k >> 1] >> (16 * (k & 1))) & 0xffffu);
  }
}

// Rounds v once to Elem and puts it at position k of the chunk.
template <class Elem>
__device__ __forceinline__ void chunk_set(uint4& c, int k, float v) {
  uint32_t* w = reinterpret_cast<uint32_t*>(&c);
  const uint32_t b = ElemIo<Elem>::bits_of(v);
  if constexpr (sizeof(Elem) == 4) {
    w[k] = b;
  } else {
    const int shift = 16 * (k & 1);
    w[k >> 1] = (w[k >> 1] & ~(0xffffu << shift)) | (b << shift);
  }
}

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace divcheck::cuda

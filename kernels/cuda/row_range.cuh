// The staging scan's per-thread view of one side's logits: the max with NaN propagation (a NaN
// logit makes it NaN, a +inf one makes it +inf: with "no finite logit" (max -inf) these are the
// poison rule, math::poisons_row) and the min (math::tame_side needs it). Whole chunks of the
// 16-bit dtypes are compared as packed pairs in their own format (max.NaN.bf16x2 / min.bf16x2,
// and the f16x2 forms: exact, the result is one of the operands): one instruction per two
// columns and statistic, instead of widening, a NaN test and a float max per column. Partial
// chunks (a slice's last one, unaligned rows) take the scalar path by their column count.
// The emulator (tests/cuda) runs the portable branch, which has the same semantics.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/element_io.cuh"
#include "kernels/math/hd.hpp"

namespace divcheck::cuda {

template <class Elem>
struct PairBits {  // the packed pair constants of a 16-bit dtype (unused for float)
  static constexpr uint32_t kNegInf = 0u, kPosInf = 0u, kNaN = 0u;
};
template <>
struct PairBits<__nv_bfloat16> {
  static constexpr uint32_t kNegInf = 0xff80ff80u, kPosInf = 0x7f807f80u, kNaN = 0x7fc0u;
};
template <>
struct PairBits<__half> {
  static constexpr uint32_t kNegInf = 0xfc00fc00u, kPosInf = 0x7c007c00u, kNaN = 0x7e00u;
};

#if !defined(__CUDA_ARCH__)
// The emulator's model of a packed-pair instruction: pick(fa, fb, a_bits, b_bits) per half.
template <class Elem, class Pick>
uint32_t emulate_pair(uint32_t a, uint32_t b, const Pick& pick) {
  uint32_t d = 0;
  for (int h = 0; h < 2; ++h) {
    const uint32_t ab = (a >> (16 * h)) & 0xffffu, bb = (b >> (16 * h)) & 0xffffu;
    d |= pick(ElemIo<Elem>::from_bits(ab), ElemIo<Elem>::from_bits(bb), ab, bb) << (16 * h);
  }
  return d;
}
#endif

// Element-wise max of two packed pairs, NaN if either element is NaN.
template <class Elem>
__device__ __forceinline__ uint32_t pair_max_nan(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  if constexpr (std::is_same_v<Elem, __nv_bfloat16>)
    asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  else
    asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  return emulate_pair<Elem>(a, b, [](float fa, float fb, uint32_t ab, uint32_t bb) {
    return (math::is_nan(fa) || math::is_nan(fb)) ? PairBits<Elem>::kNaN : (fb > fa ? bb : ab);
  });
#endif
}

// Element-wise min of two packed pairs (a NaN element yields the other operand, as PTX min).
template <class Elem>
__device__ __forceinline__ uint32_t pair_min(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  if constexpr (std::is_same_v<Elem, __nv_bfloat16>)
    asm("min.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  else
    asm("min.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  return emulate_pair<Elem>(a, b, [](float fa, float fb, uint32_t ab, uint32_t bb) {
    return math::is_nan(fa) ? bb : (math::is_nan(fb) ? ab : (fb < fa ? bb : ab));
  });
#endif
}

// max with NaN propagation (float).
__device__ __forceinline__ float max_nan(float a, float b) {
#if defined(__CUDA_ARCH__)
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else
  return (math::is_nan(a) || math::is_nan(b)) ? __builtin_nanf("") : (b > a ? b : a);
#endif
}

// One side's running range over a thread's chunks.
template <class Elem>
struct SideRange {
  static constexpr bool kPacked = sizeof(Elem) == 2;
  uint32_t pmax = kPacked ? PairBits<Elem>::kNegInf : 0u;  // packed pairs (whole chunks)
  uint32_t pmin = kPacked ? PairBits<Elem>::kPosInf : 0u;
  float mx = -math::kInf;  // scalar (float dtype, partial chunks)
  float mn = math::kInf;

  __device__ __forceinline__ void add_whole(const RawChunk<Elem>& c) {
    if constexpr (kPacked) {
      const uint32_t* w = reinterpret_cast<const uint32_t*>(&c.w[0]);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        pmax = pair_max_nan<Elem>(pmax, w[i]);
        pmin = pair_min<Elem>(pmin, w[i]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < kChunk; ++k) add_one(raw_get<Elem>(c, k));
    }
  }
  __device__ __forceinline__ void add_one(float z) {
    mx = max_nan(mx, z);
    mn = fminf(mn, z);  // ignores a NaN, which mx carries
  }
  __device__ __forceinline__ void add(const RawChunk<Elem>& c, int cnt) {
    if (cnt == kChunk) {
      add_whole(c);
      return;
    }
#pragma unroll
    for (int k = 0; k < kChunk; ++k)
      if (k < cnt) add_one(raw_get<Elem>(c, k));
  }
  // The thread's max (NaN if it saw a NaN) and min, as floats.
  __device__ __forceinline__ void result(float& max_out, float& min_out) const {
    float a = mx, b = mn;
    if constexpr (kPacked) {
      a = max_nan(a, max_nan(ElemIo<Elem>::from_bits(pmax & 0xffffu), ElemIo<Elem>::from_bits(pmax >> 16)));
      b = fminf(b, fminf(ElemIo<Elem>::from_bits(pmin & 0xffffu), ElemIo<Elem>::from_bits(pmin >> 16)));
    }
    max_out = a;
    min_out = b;
  }
};

}  // namespace divcheck::cuda

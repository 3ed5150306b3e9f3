// An order-independent sum of the softmax terms exp(t_v) in [0, 1] (the row statistic S).
//
// Each term is truncated to a fixed-point integer F_v = floor(e_v 2^62) (an exact float
// scaling, then the integer conversion truncates) and the integers are added in 128 bits,
// exactly. Integer addition is associative, so S does not depend on the order of the terms:
// the CPU's lanes and a CUDA block's tree give bitwise the same S, and a row whose logits are a
// permutation of another row's gets bitwise the same S. Only then do columns that tie in exact
// arithmetic (two columns swapped between the p and q rows: p_v = q_v elsewhere) tie in float,
// so q_v - p_v is exactly 0 there, as the reference requires.
// Error: truncation at most V 2^-62 in total, then one rounding to float: |S - sum e| <= u S +
// V 2^-62 (S >= 1 because the max column contributes exp(0) = 1), better than a float sum.
#pragma once

#include <stdint.h>

#include "kernels/math/hd.hpp"

namespace divcheck::math {

DIVCHECK_HD inline int count_leading_zeros64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return x == 0 ? 64 : __builtin_clzll(x);
#endif
}

struct FixedSum {
  uint64_t hi = 0;
  uint64_t lo = 0;

  // Add one term 0 <= e < 4 (softmax terms are <= 1). NaN or larger terms are the caller's
  // error; they are not produced for a row that passed poisons_row.
  DIVCHECK_HD void add(float e) {
    const uint64_t f = static_cast<uint64_t>(e * 4611686018427387904.0f);  // e * 2^62, truncated
    lo += f;
    if (lo < f) ++hi;
  }
  DIVCHECK_HD void merge(const FixedSum& o) {
    lo += o.lo;
    hi += o.hi + (lo < o.lo ? 1u : 0u);
  }
  // (hi 2^64 + lo) 2^-62, rounded once to float (to nearest, ties to even).
  DIVCHECK_HD float value() const {
    if (hi == 0) return static_cast<float>(lo) * 2.168404344971009e-19f;  // * 2^-62, exact
    const int s = 64 - count_leading_zeros64(hi);  // bits of hi (1..64): shift right by s to fit 64
    uint64_t top;
    if (s == 64) {
      top = hi | (lo != 0 ? 1u : 0u);
    } else {
      const uint64_t sticky = (lo & ((uint64_t{1} << s) - 1)) != 0 ? 1u : 0u;
      top = (hi << (64 - s)) | (lo >> s) | sticky;
    }
    // top >= 2^63: float keeps its 24 high bits and rounds on the 40 below, where the sticky
    // bit stands for everything shifted out. Then scale by 2^(s - 62), exactly.
    float r = static_cast<float>(top);
    for (int i = 0; i < s; ++i) r *= 2.0f;
    return r * 2.168404344971009e-19f;
  }
};

}  // namespace divcheck::math

// An order-independent sum of the softmax terms exp(t_v) in [0, 1] (the row statistic S).
//
// Each term is truncated to a fixed-point integer F_v = floor(e_v 2^40) (an exact float
// scaling, then the integer conversion truncates) and the integers are added exactly: 64 bits
// plus a 32-bit carry word (96 bits: any row length that fits in memory). Integer addition is
// associative, so S does not depend on the order of the terms: the CUDA total-variation row's
// chunk order, CTA and cluster trees and the CPU's column loop give bitwise the same S, and a row whose
// logits are a permutation of another row's gets bitwise the same S. Only then do columns that
// tie in exact arithmetic (two columns swapped between the p and q rows: p_v = q_v elsewhere)
// tie in float, so q_v - p_v is exactly 0 there and sgn(p - q) = 0 at the tie. (The CUDA
// kernel's other rows, which have no discontinuity at a tie, sum S in float: docs/semantics.md.)
// Error: truncation below V 2^-40 in total, then one rounding to float:
// |S - sum e| <= u S + V 2^-40, where S >= 1 (the max column contributes exp(0) = 1). The
// truncation is (V / 1024) 2^-30 <= (V / 1024) u / 64: a 64th of what the tolerance model's
// summation depth sigma(V) = ceil(V / 1024) + 16 already allows a float sum (docs/tolerances.md).
// Cost per term on the GPU: one multiply, one float-to-u64 conversion, a 64-bit add (a CUDA
// thread sums its own terms in a plain 64-bit integer and carries only when merging).
#pragma once

#include <stdint.h>

#include "kernels/math/hd.hpp"

namespace divcheck::math {

// The fixed-point value of one term, floor(e 2^40) (0 <= e <= 1).
DIVCHECK_HD inline uint64_t fixed_term(float e) {
  return static_cast<uint64_t>(e * 1099511627776.0f);  // e * 2^40 (exact), truncated
}

struct FixedSum {
  uint64_t lo = 0;
  uint32_t hi = 0;  // carries out of lo

  // Add one term 0 <= e <= 1 (softmax terms). NaN or larger terms are the caller's error;
  // they are not produced for a row that passed poisons_row.
  DIVCHECK_HD void add(float e) { add_fixed(fixed_term(e)); }
  // Adds an integer partial sum: fixed_term values, or a sum of fewer than 2^24 of them kept
  // in a plain 64-bit integer (which cannot overflow: 2^24 2^40 = 2^64), as the CUDA threads do.
  DIVCHECK_HD void add_fixed(uint64_t f) {
#if defined(__CUDA_ARCH__)
    asm("add.cc.u64 %0, %0, %2;\n\taddc.u32 %1, %1, 0;" : "+l"(lo), "+r"(hi) : "l"(f));
#else
    lo += f;
    if (lo < f) ++hi;
#endif
  }
  DIVCHECK_HD void merge(const FixedSum& o) {
    lo += o.lo;
    hi += o.hi + (lo < o.lo ? 1u : 0u);
  }
  // (hi 2^64 + lo) 2^-40, rounded once to float (to nearest, ties to even).
  DIVCHECK_HD float value() const {
    constexpr float kQuantum = 9.094947017729282379150390625e-13f;  // 2^-40, exact
    if (hi == 0) return static_cast<float>(lo) * kQuantum;  // u64 -> float rounds once; the scaling is exact
    // hi has s = 1..32 significant bits: the top 64 bits of the 96-bit integer are
    // (hi << (64 - s)) | (lo >> s), with a sticky bit for the s bits of lo shifted out.
    int s = 0;
    for (uint32_t h = hi; h != 0; h >>= 1) ++s;
    const uint64_t sticky = (lo & ((uint64_t{1} << s) - 1)) != 0 ? 1u : 0u;
    const uint64_t top = (static_cast<uint64_t>(hi) << (64 - s)) | (lo >> s) | sticky;
    // top >= 2^63: float keeps its 24 high bits and rounds on the 40 below, where the sticky
    // bit stands for everything shifted out. Then scale by 2^(s - 40), exactly.
    float r = static_cast<float>(top) * kQuantum;
    for (int i = 0; i < s; ++i) r *= 2.0f;
    return r;
  }
};

}  // namespace divcheck::math

// The summation order of every float sum over a vocabulary row (docs/semantics.md, "Summation
// order"). Both backends follow it exactly, so a CPU result and a CUDA result of the same row
// can be compared bit for bit where the pointwise functions agree. (The softmax normaliser S
// is the one exception: it is an exact, order-independent fixed-point sum, exact_sum.hpp.)
//
//   1. kLanes = 1024 lanes. Lane l accumulates, starting from +0.0f, the terms of the elements
//      v = l, l + 1024, l + 2048, ... in increasing v (acc = acc + term): a CUDA block of 1024
//      threads striding over the row.
//   2. The 1024 lane values are combined by a pairwise tree in warp-shuffle order:
//      (a) inside each warp w of 32 lanes, for offset = 16, 8, 4, 2, 1:
//          lane[32w + i] = lane[32w + i] + lane[32w + i + offset] for i < offset
//          (__shfl_down_sync); lane 32w then holds the warp's sum;
//      (b) the 32 warp sums W[0..31] are combined the same way (offset 16, ..., 1) and W[0]
//          is the row's sum.
//   Depth: ceil(n/1024) sequential additions plus 10 tree levels, which is what the tolerance
//   model's sigma(n) = ceil(n/1024) + 16 covers.
//
// Lanes start at +0 and an IEEE round-to-nearest sum of two values that are not both -0 is
// never -0, so lanes beyond the row's length are exact +0 and adding them changes nothing.
#pragma once

#include "kernels/math/hd.hpp"

namespace divcheck::math {

inline constexpr int kLanes = 1024;
inline constexpr int kWarpSize = 32;
static_assert((kLanes & (kLanes - 1)) == 0 && kLanes % kWarpSize == 0, "lanes: a power of two, whole warps");

// Step 2: combine kLanes lane values in place (the array is destroyed); returns the sum.
// `active`: lanes at index >= active are known to be +0 (a row shorter than kLanes); whole
// warps of such lanes are skipped, which is exact because their sums are +0.
DIVCHECK_HD inline float tree_reduce_lanes(float* lanes, int active = kLanes) {
  float sums[kLanes / kWarpSize];
  for (int w = 0; w < kLanes / kWarpSize; ++w) {
    float* warp = lanes + w * kWarpSize;
    if (w * kWarpSize >= active) {
      sums[w] = 0.0f;
      continue;
    }
    for (int offset = kWarpSize / 2; offset >= 1; offset /= 2)
      for (int i = 0; i < offset; ++i) warp[i] = warp[i] + warp[i + offset];
    sums[w] = warp[0];
  }
  for (int offset = (kLanes / kWarpSize) / 2; offset >= 1; offset /= 2)
    for (int i = 0; i < offset; ++i) sums[i] = sums[i] + sums[i + offset];
  return sums[0];
}

}  // namespace divcheck::math

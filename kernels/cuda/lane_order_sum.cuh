// Float sums in the project's summation order (kernels/math/reduction_order.hpp) on the GPU: the
// warp tree (offsets 16..1) as a butterfly, and one warp that computes a whole 1024-lane sum.
#pragma once

#include <cstdint>

#include "kernels/math/reduction_order.hpp"

namespace divcheck::cuda {

// The warp's sum in the tree order of reduction_order.hpp (offsets 16..1), in every lane: a
// butterfly, whose lane 0 adds the same pairs as the tree's, and whose partners add the same two
// values (a + b == b + a in IEEE arithmetic), so every lane holds lane 0's bits.
__device__ __forceinline__ float warp_tree_sum(float v) {
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) v = v + __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// sum_{i < n} term(i) in the order of reduction_order.hpp, computed by one whole warp (every lane
// returns the sum): lane j of the warp plays the 1024-order lanes l = 32 w + j, w = 0..31, in
// turn; each lane l adds the terms of i = l, l + 1024, ... in increasing i from +0, the warp
// tree over the 32 lanes of group w gives the group's sum W[w] (the order's step 2a), and lane w
// keeps it; the warp tree over W[0..31] is step 2b. Groups past n hold only +0 lanes: their
// W[w] = +0 without being summed (as math::tree_reduce_lanes skips them). So the bits are those of
// cpu/lane_sum.hpp and of a 1024-thread block. Terms are loaded lane by lane (coalesced).
// Cost: n / 32 terms per lane and 32 x 5 shuffles, e.g. ~5 us for n = 10^4.
template <class Term>
__device__ float warp_lane_order_sum(std::int64_t n, const Term& term) {
  const int j = static_cast<int>(threadIdx.x & 31u);
  float mine = 0.0f;  // W[j]
  for (int w = 0; w < math::kLanes / math::kWarpSize; ++w) {
    const std::int64_t l = static_cast<std::int64_t>(w) * math::kWarpSize + j;
    if (static_cast<std::int64_t>(w) * math::kWarpSize >= n) break;  // (warp-uniform) the rest are +0
    float acc = 0.0f;
    for (std::int64_t i = l; i < n; i += math::kLanes) acc = acc + term(i);
    const float group = warp_tree_sum(acc);
    if (j == w) mine = group;
  }
  return warp_tree_sum(mine);
}

// The number of i < n with flag(i), summed over one warp (every lane returns it; exact).
template <class Flag>
__device__ long long warp_count(std::int64_t n, const Flag& flag) {
  long long c = 0;
  for (std::int64_t i = threadIdx.x & 31u; i < n; i += 32) c += flag(i) ? 1 : 0;
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) c += __shfl_xor_sync(0xffffffffu, c, offset);
  return c;
}

}  // namespace divcheck::cuda

// The lane-strided sum of kernels/math/reduction_order.hpp on the CPU: lane l accumulates the
// terms of v = l, l + 1024, ... in increasing v, then the warp-shuffle pairwise tree. The CPU
// backend uses it for every float sum over a vocabulary row (the softmax normaliser S aside:
// kernels/math/exact_sum.hpp), for the projection's dot products and for dcor's long sums, so
// its rounding is the one a 1024-thread CUDA block reduction produces.
#pragma once

#include <cstdint>

#include "kernels/math/reduction_order.hpp"

namespace divcheck::cpu {

// sum_{v < n} term(v) in the project's summation order.
template <class Term>
float lane_sum(std::int64_t n, Term&& term) {
  float lanes[math::kLanes];
  const int active = n < math::kLanes ? static_cast<int>(n) : math::kLanes;
  const int touched = (active + math::kWarpSize - 1) / math::kWarpSize * math::kWarpSize;  // warps the tree reads
  for (int l = 0; l < touched; ++l) lanes[l] = 0.0f;
  for (std::int64_t v = 0; v < n; ++v) {
    float& acc = lanes[v & (math::kLanes - 1)];  // v mod 1024
    acc = acc + term(v);
  }
  return math::tree_reduce_lanes(lanes, active);
}

}  // namespace divcheck::cpu

// The three-way sign and the total-variation subgradient.
//
// d|x|/dx is taken as sgn(x) with sgn(0) = 0 (SPEC.md: exactly 0 at ties). The bug this
// project exists to catch (LigerTVDLoss, seeds/000) is the two-way select
// `p > q ? +c : -c`, which sends every tie to -c. Here a tie is its own branch, and NaN stays
// NaN instead of falling into either side.
#pragma once

#include "kernels/math/hd.hpp"

namespace divcheck::math {

// +1, -1, 0 for x > 0, x < 0, x == 0 (either signed zero); NaN for NaN. Selects, not branches:
// it runs per column in total variation's passes (bench/RESULTS.md step 42).
DIVCHECK_HD inline float sgn(float x) {
  const float s = x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
  return x != x ? x : s;
}

// coef * sgn(diff) with an exact +0 at a tie (whatever the sign of coef); NaN for NaN diff.
// This is d/dp of coef * |p - q| as a subgradient, the tvd_prob gradient with coef = scale/2.
DIVCHECK_HD inline float tv_subgradient(float diff, float coef) {
  if (diff > 0.0f) return coef;
  if (diff < 0.0f) return -coef;
  if (diff == 0.0f) return 0.0f;
  return diff;  // NaN
}

}  // namespace divcheck::math

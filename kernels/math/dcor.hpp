// Pointwise pieces of the unbiased distance correlation (SPEC.md, masked_unbiased_dcor).
//
// a_ij = sqrt(|x_i - x_j|^2 + eps) for i != j (a_ii = 0); U-centring
// A~_ij = a_ij - a_i./(N-2) - a_.j/(N-2) + a../((N-1)(N-2)); V(X,Y) = sum_{i!=j} A~ B~ / (N(N-3));
// result clamp(V(X,Y) / (sqrt(max(V(X,X),0) max(V(Y,Y),0)) + eps), 0, 1).
// The gradient of a distance with respect to x_i is (x_i - x_j) / a_ij; where a_ij == 0 (two
// equal samples with eps = 0) the subgradient 0 is used, as for |x| at 0.
#pragma once

#include "kernels/math/hd.hpp"

namespace divcheck::math {

DIVCHECK_HD inline float dcor_distance(float squared_norm, float eps) { return f_sqrt(squared_norm + eps); }

// U-centred element for i != j from a_ij, a_i./(N-2), a_.j/(N-2) and a../((N-1)(N-2)).
DIVCHECK_HD inline float u_centered(float a_ij, float row_i_over, float row_j_over, float total_over) {
  return ((a_ij - row_i_over) - row_j_over) + total_over;
}

// d a_ij / d x_i component: (x_i - x_j) / a_ij, 0 where a_ij == 0.
DIVCHECK_HD inline float distance_direction(float diff, float a_ij) { return a_ij == 0.0f ? 0.0f : diff / a_ij; }

// The clamped ratio and what the gradient needs from it.
struct DcorRatio {
  float value;        // clamp(raw, 0, 1)
  float raw;          // V(X,Y) / den
  float den;          // sqrt(max(Vxx,0) max(Vyy,0)) + eps
  bool clamp_active;  // raw <= 0 or raw >= 1: the gradient is exactly 0 (at the edges too)
};

DIVCHECK_HD inline DcorRatio dcor_ratio(float vxy, float vxx, float vyy, float eps) {
  float mx = vxx > 0.0f ? vxx : 0.0f;
  float my = vyy > 0.0f ? vyy : 0.0f;
  float den = f_sqrt(mx * my) + eps;
  float raw = vxy / den;
  DcorRatio r{raw, raw, den, false};
  // At raw = 0 or 1 exactly the clamp's one-sided derivatives are 0 and 1; the project takes 0
  // (as sgn(0) = 0 takes the flat side). NaN (0/0 with eps = 0) stays NaN and unclamped.
  if (raw <= 0.0f) { r.value = 0.0f; r.clamp_active = true; }
  if (raw >= 1.0f) { r.value = 1.0f; r.clamp_active = true; }
  return r;
}

// d ratio / d V(X,X) (swap the V(X,X)/V(Y,Y) arguments for d/dV(Y,Y)), with the clamp not
// active: -(Vxy / den^2) * d den / d Vxx, d den / d Vxx = sqrt(My) / (2 sqrt(Mx)) for Vxx > 0
// and My > 0, and 0 where max(Vxx, 0) or the product is at its flat side (Vxx <= 0 or My = 0).
DIVCHECK_HD inline float dcor_d_ratio_d_vxx(const DcorRatio& r, float vxy, float vxx, float vyy) {
  if (!(vxx > 0.0f) || !(vyy > 0.0f)) return 0.0f;
  float dden = 0.5f * (f_sqrt(vyy) / f_sqrt(vxx));
  return -((vxy / r.den) / r.den) * dden;
}

}  // namespace divcheck::math

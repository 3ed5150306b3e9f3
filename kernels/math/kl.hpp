// Kullback-Leibler and Jefferys per-column terms and gradients (docs/semantics.md tables).
//
// Column inputs: p, q the probabilities, lp, lq their logs, s the support flag. lp == -inf
// means p is exactly 0 (softmax.hpp guarantees it only for a -inf logit), and then every term
// with the factor p is 0 (0 log 0 = 0, 0 log(0/0) = 0). A column with p > 0 = q makes KL(p||q)
// +inf; the caller then makes every gradient of the position NaN (non-finite rule 3).
//
// In a gradient p * X, a p that is 0 in float (a -inf logit, or exp(lp) below the smallest
// subnormal) gives exactly 0: the product is then at most 2^-150 |X|, and X = d - K may have
// overflowed to inf (a logit spread near FLT_MAX), where 0 * inf would be a spurious NaN.
//
// Row statistics: K_p = sum p d (= KL(p||q)), K_q = sum q (-d) (= KL(q||p)), and with a support
// mask the restricted sums K_p^S, K_q^S, P_S = sum s p, Q_S = sum s q; d = lp - lq.
// The gradient forms are already simplified with sum p = sum q = 1 (full support), so
// identical rows (d == 0 bitwise) give exact zeros.
#pragma once

#include "kernels/math/hd.hpp"

namespace divcheck::math {

DIVCHECK_HD inline bool zero_prob(float lp) { return lp == -kInf; }

// p (lp - lq) with 0 log 0 = 0 and p log(p/0) = +inf.
DIVCHECK_HD inline float kl_term(float p, float lp, float lq) {
  if (zero_prob(lp)) return 0.0f;
  if (zero_prob(lq)) return kInf;
  return p * (lp - lq);
}

struct KlStats {
  float kp;  // K_p = KL(p||q) of the row (the per-position loss)
};

// d KL(p||q) / d x_v (the q-side logit): q_v - p_v.
DIVCHECK_HD inline float kl_grad_q(float p, float q) { return q - p; }

// d KL(p||q) / d y_v (the p-side logit): p_v (d_v - K_p).
DIVCHECK_HD inline float kl_grad_p(float p, float lp, float lq, const KlStats& st) {
  if (p == 0.0f) return 0.0f;
  return p * ((lp - lq) - st.kp);
}

// (p - q)(lp - lq): 0 when both are 0, +inf when exactly one is.
DIVCHECK_HD inline float jefferys_term(float p, float q, float lp, float lq) {
  bool zp = zero_prob(lp), zq = zero_prob(lq);
  if (zp && zq) return 0.0f;
  if (zp || zq) return kInf;
  return (p - q) * (lp - lq);
}

struct JefferysStats {
  float kp;  // K_p (over the support when there is one)
  float kq;  // K_q
  float ps;  // P_S = sum s p (support form only)
  float qs;  // Q_S = sum s q (support form only)
};

// Full support: d/dy_v = p_v (d_v - K_p) + p_v - q_v.
DIVCHECK_HD inline float jefferys_grad_p(float p, float q, float lp, float lq, const JefferysStats& st) {
  float a = p == 0.0f ? 0.0f : p * ((lp - lq) - st.kp);
  return a + (p - q);
}
// Full support: d/dx_v = q_v (-d_v - K_q) + q_v - p_v.
DIVCHECK_HD inline float jefferys_grad_q(float p, float q, float lp, float lq, const JefferysStats& st) {
  float a = q == 0.0f ? 0.0f : q * ((lq - lp) - st.kq);
  return a + (q - p);
}

// With a support mask: d/dy_v = s_v (p_v - q_v + p_v d_v) - p_v (K_p^S + P_S - Q_S).
DIVCHECK_HD inline float jefferys_support_grad_p(float p, float q, float lp, float lq, bool s, const JefferysStats& st) {
  float in_support = 0.0f;
  if (s) in_support = (p - q) + (p == 0.0f ? 0.0f : p * (lp - lq));
  return in_support - (p == 0.0f ? 0.0f : p * (st.kp + (st.ps - st.qs)));
}
// With a support mask: d/dx_v = s_v (q_v - p_v - q_v d_v) + q_v (-K_q^S + P_S - Q_S).
DIVCHECK_HD inline float jefferys_support_grad_q(float p, float q, float lp, float lq, bool s, const JefferysStats& st) {
  float in_support = 0.0f;
  if (s) in_support = (q - p) + (q == 0.0f ? 0.0f : q * (lq - lp));
  return in_support + (q == 0.0f ? 0.0f : q * ((st.ps - st.qs) - st.kq));
}

}  // namespace divcheck::math

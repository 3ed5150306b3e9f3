// Jensen-Shannon per-column terms and gradients (docs/semantics.md).
//
// e^p_v = log(2 p_v / (p_v + q_v)) is a function of delta = lp_v - lq_v alone, e(delta), and
// e^q_v = e(-delta) = e^p_v - delta (their difference is log(p_v / q_v)). One expm1 and one
// log1p per column give both: with a = |delta| >= 0, the side with the larger log-probability
// has e(a) = -log1p(expm1(-a) / 2) in [0, log 2] (expm1(-a) in (-1, 0]: no overflow, accurate
// near a = 0), the other e(-a) = e(a) - a, where |e(-a)| >= a / 2 >= e(a) (e is concave on
// a >= 0 with slope 1/2 at 0), so the subtraction does not cancel. e(0) = +0 exactly, so
// identical rows give exact zeros; e(+inf) = log 2 (p > 0 = q) and e(-inf) = -inf (the caller
// multiplies by a zero probability, and skips it).
// With J_p = sum s p e^p and J_q = sum s q e^q: ell = (J_p + J_q)/2,
// d/dy_v = p_v (s_v e^p_v - J_p) / 2, d/dx_v = q_v (s_v e^q_v - J_q) / 2.
#pragma once

#include "kernels/math/hd.hpp"
#include "kernels/math/kl.hpp"

namespace divcheck::math {

struct JsRatios {
  float ep;  // e^p = log(2p / (p + q))
  float eq;  // e^q = log(2q / (p + q))
};

// Both log-ratios of a column from its log-probabilities (NaN when both are -inf: the callers
// skip zero-probability columns).
DIVCHECK_HD inline JsRatios js_log_ratios(float lp, float lq) {
  const float delta = lp - lq;
  const float a = delta < 0.0f ? 0.0f - delta : delta;  // |delta| (-0 stays -0: both results are +0)
  const float big = 0.0f - f_log1p(f_expm1(0.0f - a) * 0.5f);
  const float small = big - a;
  return delta < 0.0f ? JsRatios{small, big} : JsRatios{big, small};
}

// s p e^p with 0 log 0 = 0 (the summand of J_p; pass q, lq, e^q for J_q).
DIVCHECK_HD inline float js_half_term(float p, float lp, float e, bool s) {
  if (!s || zero_prob(lp)) return 0.0f;
  return p * e;
}

struct JsStats {
  float jp;  // J_p
  float jq;  // J_q
};

DIVCHECK_HD inline float js_loss(const JsStats& st) { return 0.5f * (st.jp + st.jq); }

// The gradient of one side: p (s e^p - J_p) / 2 (pass q, e^q, J_q for the q side).
DIVCHECK_HD inline float js_grad(float p, float e, bool s, float j) {
  if (p == 0.0f) return 0.0f;  // as in kl.hpp: a float-zero probability contributes 0
  return 0.5f * (p * ((s ? e : 0.0f) - j));
}

}  // namespace divcheck::math

// Jensen-Shannon per-column terms and gradients (docs/semantics.md).
//
// e^p_v = log(2 p_v / (p_v + q_v)) is a function of delta = lp_v - lq_v alone, e(delta), and
// e^q_v = e(-delta) = e^p_v - delta (their difference is log(p_v / q_v)). With a = |delta| >= 0,
// the side with the larger log-probability has e(a) = log 2 - log(1 + exp(-a)) in [0, log 2]
// (SPEC.md's lm = logaddexp(lp, lq) - log 2, for that side: exp(-a) in (0, 1], no overflow), the
// other e(-a) = e(a) - a, where |e(-a)| >= a / 2 >= e(a) (e is concave on a >= 0 with slope 1/2
// at 0), so the subtraction does not cancel. One exponential and one log per column, both the
// fast forms (f_softmax_exp, f_fast_log: 3 and 2 instructions on the GPU, bench/RESULTS.md step
// 41; before, an accurate expm1f and log1pf: -log1p(expm1(-a) / 2)). Near a = 0 the fast form is
// accurate to a few u absolute, not relative to e(a) ~ a / 2: the bound's scale already carries
// the error of a itself (>= 4 units, halved) there, which covers it (docs/tolerances.md, "c per
// row"). e(0) = +0 exactly (a select: identical rows give exact zeros); e(+inf) = log 2 (p > 0 =
// q) and e(-inf) = -inf (the caller multiplies by a zero probability, and skips it).
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
  const float big = a == 0.0f ? 0.0f : kLn2 - f_fast_log(1.0f + f_softmax_exp(0.0f - a));
  const float small = big - a;
  return delta < 0.0f ? JsRatios{small, big} : JsRatios{big, small};
}

// s p e^p with 0 log 0 = 0 (the summand of J_p; pass q, lq, e^q for J_q).
DIVCHECK_HD inline float js_half_term_finite(float p, float e) { return p * e; }  // in the support (kl.hpp *_finite)
DIVCHECK_HD inline float js_half_term(float p, float lp, float e, bool s) {
  if (!s || zero_prob(lp)) return 0.0f;
  return js_half_term_finite(p, e);
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
DIVCHECK_HD inline float js_grad_finite(float p, float e, float j) { return 0.5f * (p * (e - j)); }  // in the support

}  // namespace divcheck::math

// Jensen-Shannon per-column terms and gradients (docs/semantics.md).
//
// e^p_v = log(2 p_v / (p_v + q_v)) is a function of delta = lp_v - lq_v alone:
//   delta >= -1:  e = -log1p(expm1(-delta) / 2)
//   delta <  -1:  e = log 2 + delta - log1p(exp(delta))
// (the second branch keeps expm1(-delta) from overflowing). It is exactly +0 at delta = 0, so
// identical rows give exact zeros; e(+inf) = log 2 (p > 0 = q); e^q_v = e(-delta).
// With J_p = sum s p e^p and J_q = sum s q e^q: ell = (J_p + J_q)/2,
// d/dy_v = p_v (s_v e^p_v - J_p) / 2, d/dx_v = q_v (s_v e^q_v - J_q) / 2.
#pragma once

#include "kernels/math/hd.hpp"
#include "kernels/math/kl.hpp"

namespace divcheck::math {

DIVCHECK_HD inline float js_log_ratio(float delta) {
  if (delta >= -1.0f) return 0.0f - f_log1p(f_expm1(-delta) * 0.5f);
  return (kLn2 + delta) - f_log1p(f_exp(delta));
}

// s p e^p with 0 log 0 = 0 (the summand of J_p); swap the arguments for J_q.
DIVCHECK_HD inline float js_half_term(float p, float lp, float lq, bool s) {
  if (!s || zero_prob(lp)) return 0.0f;
  return p * js_log_ratio(lp - lq);
}

struct JsStats {
  float jp;  // J_p
  float jq;  // J_q
};

DIVCHECK_HD inline float js_loss(const JsStats& st) { return 0.5f * (st.jp + st.jq); }

DIVCHECK_HD inline float js_grad_p(float p, float lp, float lq, bool s, const JsStats& st) {
  if (p == 0.0f) return 0.0f;  // as in kl.hpp: a float-zero probability contributes 0
  float e = s ? js_log_ratio(lp - lq) : 0.0f;
  return 0.5f * (p * (e - st.jp));
}
DIVCHECK_HD inline float js_grad_q(float q, float lp, float lq, bool s, const JsStats& st) {
  if (q == 0.0f) return 0.0f;
  float e = s ? js_log_ratio(lq - lp) : 0.0f;
  return 0.5f * (q * (e - st.jq));
}

}  // namespace divcheck::math

// Soft cross-entropy ce = -sum p lq per column, and the smooth cap of masked_cross_entropy.
//
// ce is +inf when some column has q = 0 < p. Uncapped, the caller then makes the position's
// gradients NaN; capped, the loss is max_loss and the gradient exactly 0 (the capped function
// is constant near there): capped_ce_slope(+inf) is exactly 0.
#pragma once

#include "kernels/math/hd.hpp"
#include "kernels/math/kl.hpp"

namespace divcheck::math {

// -p lq with 0 log 0 = 0 and -p log 0 = +inf.
DIVCHECK_HD inline float ce_term_finite(float p, float lq) { return -(p * lq); }  // (kl.hpp *_finite)
DIVCHECK_HD inline float ce_term(float p, float lp, float lq) {  // selects, as kl_term
  const float v = ce_term_finite(p, lq);
  return zero_prob(lp) ? 0.0f : (zero_prob(lq) ? kInf : v);
}

struct CeStats {
  float ce;  // the row's cross-entropy
};

// d ce / d x_v = q_v - p_v.
DIVCHECK_HD inline float ce_grad_q(float p, float q) { return q - p; }
// d ce / d y_v = -p_v (lq_v + ce).
DIVCHECK_HD inline float ce_grad_p_finite(float p, float lq, const CeStats& st) { return -(p * (lq + st.ce)); }
DIVCHECK_HD inline float ce_grad_p(float p, float lp, float lq, const CeStats& st) {
  (void)lp;
  const float v = ce_grad_p_finite(p, lq, st);
  return p == 0.0f ? 0.0f : v;  // as in kl.hpp: a float-zero probability contributes 0
}

// The gradients of a tame row from its shifted logits (as kl.hpp kl_grads_tame, whose exponents
// and q side these share): ∂/∂y = f·(−p(lq + ce)) = p·fma(−f, t_x, f·(log S_x − ce)), since
// lq = t_x − log S_x. Error (units of u, docs/tolerances.md "Tame gradient forms"): the
// exponents as kl_grads_tame's; the factor by log S_x + ce (C = log S_x − ce), |f·C|'s rounding
// and |lq + ce|. Identical rows: p = q bitwise, so the q side is exactly ±0 (structural there).
DIVCHECK_HD inline TameGradRow ce_tame_grad_row(float log_sy, float log_sx, const CeStats& st, float f) {
  return {tame_exp2_offset(log_sy), tame_exp2_offset(log_sx), f, f * (log_sx - st.ce)};
}
DIVCHECK_HD inline void ce_grads_tame(float ty, float tx, const TameGradRow& r, float& gp, float& gq) {
  float p, q;
  tame_probs(ty, tx, r, p, q);
  gp = p * f_fma(-r.f, tx, r.fc);
  gq = r.f * (q - p);
}

// The capped loss max_loss * tanh(scaling_factor * ce / max_loss); ce = +inf gives max_loss.
DIVCHECK_HD inline float capped_ce(float ce, float max_loss, float scaling_factor) {
  return max_loss * f_tanh((scaling_factor * ce) / max_loss);
}

// d capped / d ce = k sech^2(z), z = k ce / M, evaluated as 4 e^{-2|z|} / (1 + e^{-2|z|})^2
// (never 1 - tanh^2, which is 0 as soon as tanh rounds to 1). Exactly 0 for z = +inf.
DIVCHECK_HD inline float capped_ce_slope(float ce, float max_loss, float scaling_factor) {
  float z = (scaling_factor * ce) / max_loss;
  float e = f_exp(-2.0f * f_abs(z));
  float den = 1.0f + e;
  return scaling_factor * ((4.0f * e) / (den * den));
}

// One-pass form (see kl.hpp): ce = log S_x − (B / S_y) 2^64, B = Σ_v [t_y > −∞] e_y t_x 2^-64.
DIVCHECK_HD inline float ce_one_pass_term_finite(float ey, float tx) { return ey * (tx * kOnePassDown); }  // tame rows
// Tame rows: the term's two factors e_y and t_x, summed as kl_one_pass_factors_tame's.
DIVCHECK_HD inline void ce_one_pass_factors_tame(float ey, float tx, float& a, float& b) {
  a = ey;
  b = tx;
}
DIVCHECK_HD inline float ce_one_pass_term(float ey, float ty, float tx) {  // ce_term's structure
  const float v = ce_one_pass_term_finite(ey, tx);
  return ty == -kInf ? 0.0f : (tx == -kInf ? -kInf : v);
}
// A partial B moved to larger maxima (kl_one_pass_rescale's argument): each term e_y t_x
// becomes e_y f_y (t_x + d_x), so B' = f_y (B + S_y d_x 2^-64); B = -inf (p > 0 = q) stays.
DIVCHECK_HD inline float ce_one_pass_rescale(float b, float sy, float fy, float dx) {
  if (sy == 0.0f) return 0.0f;
  const float v = b + sy * (dx * kOnePassDown);
  return v == -kInf ? -kInf : fy * v;
}
DIVCHECK_HD inline float ce_from_one_pass(float b, float sy, float log_sx) {
  return log_sx - (b / sy) * kOnePassUp;
}

}  // namespace divcheck::math

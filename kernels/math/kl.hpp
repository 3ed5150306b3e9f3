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
// Written as selects (no early return) so that a GPU evaluates it without a branch per column;
// the value is the same.
// The *_finite forms below are the values of these formulas where no probability is zero and no
// log is -inf (a tame row, softmax.hpp tame_side: every p >= e^-64 / V > 0): the same operations,
// without the zero-probability selects (the CUDA kernels' tame forms; the same bits there).
DIVCHECK_HD inline float kl_term_finite(float p, float lp, float lq) { return p * (lp - lq); }
DIVCHECK_HD inline float kl_term(float p, float lp, float lq) {
  const float v = kl_term_finite(p, lp, lq);
  return zero_prob(lp) ? 0.0f : (zero_prob(lq) ? kInf : v);
}

struct KlStats {
  float kp;  // K_p = KL(p||q) of the row (the per-position loss)
};

// d KL(p||q) / d x_v (the q-side logit): q_v - p_v.
DIVCHECK_HD inline float kl_grad_q(float p, float q) { return q - p; }

// d KL(p||q) / d y_v (the p-side logit): p_v (d_v - K_p).
DIVCHECK_HD inline float kl_grad_p_finite(float p, float lp, float lq, const KlStats& st) {
  return p * ((lp - lq) - st.kp);
}
DIVCHECK_HD inline float kl_grad_p(float p, float lp, float lq, const KlStats& st) {
  const float v = kl_grad_p_finite(p, lp, lq, st);
  return p == 0.0f ? 0.0f : v;
}

// The gradients of a tame row from its shifted logits t_y, t_x (softmax.hpp tame_side; the CUDA
// kernels' tame log-softmax path, row_gradients.cuh gradient_chunk): the same values as
// f·kl_grad_p_finite and f·kl_grad_q up to rounding, in fewer operations. Per row (TameGradRow):
// c_y = −log S_y·log₂e, c_x likewise, and f·C with C = (log S_y − log S_x) + K_p; per column:
//   p = 2^fma(t_y, log₂e, c_y),  q = 2^fma(t_x, log₂e, c_x)      (= exp(lp), exp(lq))
//   ∂/∂y = p·fma(f, t_y − t_x, −f·C)                              (= f·p·(d − K_p))
//   ∂/∂x = f·(q − p)
// since lp − lq = (t_y − t_x) − (log S_y − log S_x). Error (first order, units of u; docs/
// tolerances.md "Tame gradient forms"): the exponent errs by log S + |lp| + 0.224|lp| <= 2.23|lp|
// (c's rounding, the fma's, the float log₂e's representation on the whole exponent), inside the
// scale's 24 + 16|lp|; f·(d − K_p) by |t_y| + |t_x| + 2|C| + |d − K_p| with |C| <= |lp| + |lq| + |K_p|
// (|t| + log S = |lp| for a shifted logit t <= 0). Identical rows: t_y = t_x and S_y = S_x
// bitwise, K_p = 0 exactly, so C = 0, p = q, and both gradients are exactly ±0.
// A row's constants of the tame gradient forms (KL here, cross-entropy in cross_entropy.hpp).
struct TameGradRow {
  float cy, cx;  // −log S·log₂e of each side
  float f;       // the gradient factor (w g / T; cross-entropy: times the cap's slope)
  float fc;      // f·C: KL C = (log S_y − log S_x) + K_p; cross-entropy C = log S_x − ce
};
// p and q of a tame column from its shifted logits: 2^fma(t, log₂e, −log S·log₂e).
DIVCHECK_HD inline void tame_probs(float ty, float tx, const TameGradRow& r, float& p, float& q) {
  p = tame_prob_from_shifted(ty, r.cy);
  q = tame_prob_from_shifted(tx, r.cx);
}
DIVCHECK_HD inline TameGradRow kl_tame_grad_row(float log_sy, float log_sx, const KlStats& st, float f) {
  return {tame_exp2_offset(log_sy), tame_exp2_offset(log_sx), f, f * ((log_sy - log_sx) + st.kp)};
}
DIVCHECK_HD inline void kl_grads_tame(float ty, float tx, const TameGradRow& r, float& gp, float& gq) {
  float p, q;
  tame_probs(ty, tx, r, p, q);
  gp = p * f_fma(r.f, ty - tx, -r.fc);
  gq = r.f * (q - p);
}

// (p - q)(lp - lq): 0 when both are 0, +inf when exactly one is.
DIVCHECK_HD inline float jefferys_term_finite(float p, float q, float lp, float lq) { return (p - q) * (lp - lq); }
DIVCHECK_HD inline float jefferys_term(float p, float q, float lp, float lq) {
  const bool zp = zero_prob(lp), zq = zero_prob(lq);
  const float v = jefferys_term_finite(p, q, lp, lq);
  return (zp && zq) ? 0.0f : ((zp || zq) ? kInf : v);
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
DIVCHECK_HD inline float jefferys_grad_p_finite(float p, float q, float lp, float lq, const JefferysStats& st) {
  return p * ((lp - lq) - st.kp) + (p - q);
}
// Full support: d/dx_v = q_v (-d_v - K_q) + q_v - p_v.
DIVCHECK_HD inline float jefferys_grad_q(float p, float q, float lp, float lq, const JefferysStats& st) {
  float a = q == 0.0f ? 0.0f : q * ((lq - lp) - st.kq);
  return a + (q - p);
}
DIVCHECK_HD inline float jefferys_grad_q_finite(float p, float q, float lp, float lq, const JefferysStats& st) {
  return q * ((lq - lp) - st.kq) + (q - p);
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

// One-pass forms of the row statistics (the CUDA logit kernel's log-softmax path): the pass
// that sums S also sums, per column, the scaled terms below; with Σp = 1 and
// lp − lq = (t_y − t_x) − (log S_y − log S_x) they give K_p without a second pass over the row:
//   K_p = (A / S_y) 2^64 − (log S_y − log S_x),  A = Σ_v [t_y > −∞] e_y (t_y − t_x) 2^-64.
// The 2^-64 keeps A finite where K_p is (each term is at most FLT_MAX 2^-64, S_y >= 1);
// it costs only terms below 2^-86, far under the loss's absolute error floor. Error (first
// order, units of u): the terms and their sum as Σ p|d| (covered by σ), and log S_y, log S_x
// with |log S| <= |lp_v| for every v: at most Σ p(|lp| + |lq|) + 4, which the scale of the loss
// already carries in a_p + a_q (docs/tolerances.md). Identical rows give A = 0 and
// log S_y = log S_x bitwise: K_p = 0 exactly. A +inf term (p > 0 = q) makes K_p = +inf.
inline constexpr float kOnePassDown = 5.42101086242752217003726400434970855712890625e-20f;  // 2^-64
inline constexpr float kOnePassUp = 18446744073709551616.0f;                                 // 2^64

// The term of one column, with kl_term's structure: t_y = -inf (p = 0) gives 0, t_x = -inf
// (q = 0 < p) gives +inf; e_y = exp(t_y) may underflow to 0 for a finite t_y: then 0.
// Finite t_y, t_x (a tame row, softmax.hpp): the term without the zero-probability selects.
DIVCHECK_HD inline float kl_one_pass_term_finite(float ey, float ty, float tx) { return ey * ((ty - tx) * kOnePassDown); }
// Tame rows (softmax.hpp: t_y, t_x finite and >= kTameShift, so |t_y - t_x| <= 64 and e_y <= 1):
// the term's two factors, e_y and t_y - t_x. The kernel sums their products unscaled (at most
// 64 per column: no overflow for V < 2^31) with the first pairwise level as one fused
// multiply-add (a rounding fewer than product and sum: inside the error model of the terms), and
// scales the thread's sum by 2^-64 once (kOnePassDown: exact unless the sum is below 2^-62, where
// the one rounding to a subnormal costs at most 2^-150, as one column's scaled term did).
DIVCHECK_HD inline void kl_one_pass_factors_tame(float ey, float ty, float tx, float& a, float& b) {
  a = ey;
  b = ty - tx;
}
DIVCHECK_HD inline float kl_one_pass_term(float ey, float ty, float tx) {
  const float v = kl_one_pass_term_finite(ey, ty, tx);
  return ty == -kInf ? 0.0f : (tx == -kInf ? kInf : v);
}
// A partial A (the terms of some columns, with t_y, t_x relative to partial maxima m_y, m_x)
// moved to larger maxima M_y, M_x: with d = (m - M)/T <= 0 per side and f_y = exp(d_y), each
// term e_y (t_y - t_x) becomes e_y f_y (t_y - t_x + d_y - d_x), so
//   A' = f_y (A + S_y (d_y - d_x) 2^-64)     (S_y: the same columns' sum of e_y).
// S_y = 0 (no finite p-side logit among the columns) means A = 0. An infinite A (a column with
// p > 0 = q) stays infinite even where f_y underflows to 0 (p tiny but positive: KL = +inf).
// Errors (first order): |d| <= |t| for every column of the part (t <= d <= 0), so the shift's
// roundings are inside the terms' |t_y| + |t_x| of docs/tolerances.md; f_y's rounding and the
// products are one summation level each (docs/semantics.md). d_y = d_x (identical rows) gives
// a zero shift: A stays exactly 0.
DIVCHECK_HD inline float kl_one_pass_rescale(float a, float sy, float fy, float dy, float dx) {
  if (sy == 0.0f) return 0.0f;
  const float v = a + sy * ((dy - dx) * kOnePassDown);
  return v == kInf ? kInf : fy * v;
}
DIVCHECK_HD inline float kl_from_one_pass(float a, float sy, float log_sy, float log_sx) {
  return (a / sy) * kOnePassUp - (log_sy - log_sx);
}

}  // namespace divcheck::math

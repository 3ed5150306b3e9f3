// Squared Hellinger per-column terms and gradients (docs/semantics.md).
//
// sqrt(p) is taken as exp(lp / 2), which stays accurate (and non-zero) long after p itself
// underflows; both sides use the same function, so identical rows give equal roots.
// ell = 1/2 sum s (sqrt p - sqrt q)^2 (a sum of non-negative terms, never 1 - sum sqrt(pq)).
// h^p_v = s_v (sqrt p_v - sqrt q_v) sqrt p_v / 2, H_p = sum h^p; d/dy_v = h^p_v - p_v H_p;
// symmetrically for q.
#pragma once

#include "kernels/math/hd.hpp"

namespace divcheck::math {

DIVCHECK_HD inline float sqrt_prob(float lp) { return f_softmax_exp_half(lp); }  // exp(lp / 2)

// s (sqrt p - sqrt q)^2 / 2 from the two roots.
DIVCHECK_HD inline float hellinger_term(float rp, float rq, bool s) {
  if (!s) return 0.0f;
  float d = rp - rq;
  return 0.5f * (d * d);
}

// h^p_v (swap the roots for h^q_v).
DIVCHECK_HD inline float hellinger_h(float rp, float rq, bool s) {
  if (!s) return 0.0f;
  return 0.5f * ((rp - rq) * rp);
}

struct HellingerStats {
  float hp;  // H_p = sum h^p
  float hq;  // H_q = sum h^q
};

DIVCHECK_HD inline float hellinger_grad_p(float p, float rp, float rq, bool s, const HellingerStats& st) {
  return hellinger_h(rp, rq, s) - p * st.hp;
}
DIVCHECK_HD inline float hellinger_grad_q(float q, float rp, float rq, bool s, const HellingerStats& st) {
  return hellinger_h(rq, rp, s) - q * st.hq;
}

// One-pass form of the gradients' statistics (the CUDA kernels with gradients on the plain paths,
// no support mask; docs/tolerances.md "Hellinger's gradient statistics"): with full support
// H_p = sum (p - sqrt(pq)) / 2 = (1 - B) / 2 = H_q, B = sum sqrt(p q). The pass that sums S also
// sums b_v = exp((t_y + t_x) / 2) (t relative to the same maxima as S's terms: sqrt(e_y e_x)),
// so B = (sum b) / sqrt(S_y S_x). Never the loss (SPEC.md: not as 1 - sum sqrt(pq)); the
// gradients' H has the absolute floor this form needs. Identical rows: t_y = t_x bitwise, so
// b_v = e_y and sum b = S_y = S_x bitwise (the same exponential, order and rescales), the square
// root of S^2 is S exactly (correctly rounded), and H = (1 - 1) / 2 = 0 exactly.
// kFtz: the flushing exponential, where S's terms take it (tame chunks).
// (0 where either side is -inf, a zero probability.)
template <bool kFtz>
DIVCHECK_HD inline float hellinger_one_pass_term(float ty, float tx) {
  return kFtz ? f_softmax_exp_half_sum_ftz(ty, tx) : f_softmax_exp_half_sum(ty, tx);
}
// A partial sum of b moved to larger maxima (d = (m - M)/T <= 0 per side, as S' = S exp(d)):
// b' = b exp((d_y + d_x) / 2). d_y = d_x (identical rows) gives exp(d_y), S's factor, bitwise.
DIVCHECK_HD inline float hellinger_one_pass_rescale(float b, float dy, float dx) {
  return b * f_softmax_exp_half_sum(dy, dx);
}
DIVCHECK_HD inline float hellinger_h_from_one_pass(float b, float sy, float sx) {
  return 0.5f * (1.0f - b / f_sqrt(sy * sx));
}

}  // namespace divcheck::math

// Total variation on logit rows (total_variation) and on probability rows (tvd_prob).
//
// Logit rows: ell = 1/2 sum s |p - q|. Each column has a class c_v = s_v sgn(p_v - q_v) in
// {+1, -1, 0} (sgn(0) = 0, sign.hpp; columns outside the support are class 0). docs/semantics.md
// writes the gradients with T_p = sum c p, T_q = sum c q:
//   d/dy_v = p_v (c_v - T_p) / 2,   d/dx_v = q_v (T_q - c_v) / 2.
// With the class masses P+, P-, P0 (sums of p over the columns of each class; P+ + P- + P0 = 1,
// the full softmax row) and Q+, Q-, Q0, the same values are
//   c_v = +1:  d/dy_v =  p_v (2 P- + P0) / 2,   d/dx_v = -q_v (2 Q- + Q0) / 2
//   c_v = -1:  d/dy_v = -p_v (2 P+ + P0) / 2,   d/dx_v =  q_v (2 Q+ + Q0) / 2
//   c_v =  0:  d/dy_v =  p_v (P- - P+) / 2,     d/dx_v =  q_v (Q+ - Q-) / 2
// (exact math: 1 is replaced by the sum of the three masses, the same simplification with
// sum p = sum q = 1 as the other rows). This form never subtracts two nearly equal numbers and
// is exactly 0 where the exact gradient is structurally 0: identical rows (every class 0), or
// every column of one side's support in the same class (e.g. q_v > p_v wherever q_v > 0), where
// c - T_p in float would leave a rounding residue of 1 - sum p.
// tvd_prob: the element value |p - q| / 2 and the gradient scale/2 * sgn(p - q) (sign.hpp's
// tv_subgradient).
#pragma once

#include "kernels/math/hd.hpp"
#include "kernels/math/sign.hpp"

namespace divcheck::math {

DIVCHECK_HD inline float tv_abs_term(float p, float q, bool s) { return s ? f_abs(p - q) : 0.0f; }

// The column's class c_v = s_v sgn(p_v - q_v): +1, -1, 0 (NaN for NaN).
DIVCHECK_HD inline float tv_class(float p, float q, bool s) { return s ? sgn(p - q) : 0.0f; }

// The summand of a class mass: `mass` (p_v or q_v) when the column is in class `which`.
DIVCHECK_HD inline float tv_class_mass(float p, float q, bool s, float which, float mass) {
  return tv_class(p, q, s) == which ? mass : 0.0f;
}

struct TvStats {
  float p_plus, p_minus, p_zero;  // P+, P-, P0
  float q_plus, q_minus, q_zero;  // Q+, Q-, Q0
};

// The gradients by class, branch-free (bench/RESULTS.md step 42: the if-chains compiled to
// branches in the gradient loop): the class selects one of three coefficients, which depend on
// the row's masses only (the compiler hoists them out of the column loop), and the probability
// is multiplied once. p (K / 2) equals the table's (p K) / 2 but for a subnormal product (one
// rounding either way). NaN for a NaN class.
DIVCHECK_HD inline float tv_grad_p(float p, float q, bool s, const TvStats& st) {
  const float c = tv_class(p, q, s);
  const float k = c > 0.0f   ? 0.5f * (2.0f * st.p_minus + st.p_zero)
                  : c < 0.0f ? -(0.5f * (2.0f * st.p_plus + st.p_zero))
                             : 0.5f * (st.p_minus - st.p_plus);
  return c != c ? c : p * k;
}
DIVCHECK_HD inline float tv_grad_q(float p, float q, bool s, const TvStats& st) {
  const float c = tv_class(p, q, s);
  const float k = c > 0.0f   ? -(0.5f * (2.0f * st.q_minus + st.q_zero))
                  : c < 0.0f ? 0.5f * (2.0f * st.q_plus + st.q_zero)
                             : 0.5f * (st.q_plus - st.q_minus);
  return c != c ? c : q * k;
}

// tvd_prob element: |p - q| / 2 (NaN for NaN or inf - inf).
DIVCHECK_HD inline float tvd_prob_element(float p, float q) { return 0.5f * f_abs(p - q); }

// tvd_prob gradient element: (scale * g / 2) * sgn(p - q), exactly +0 at a tie.
DIVCHECK_HD inline float tvd_prob_grad(float p, float q, float half_scale_times_g) {
  return tv_subgradient(p - q, half_scale_times_g);
}

}  // namespace divcheck::math

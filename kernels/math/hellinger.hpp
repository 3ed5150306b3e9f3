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

DIVCHECK_HD inline float sqrt_prob(float lp) { return f_softmax_exp(0.5f * lp); }

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

}  // namespace divcheck::math

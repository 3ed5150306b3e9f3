// The six row kernels of the logit-level divergences as policies of the CUDA row kernel
// (logit_rows_kernel.cuh). Each policy says which lane sums the row needs (accumulate), how
// they give the per-position loss and the gradient mode (finish), and the gradient of one
// column (grads). Every formula is kernels/math's; the composition mirrors
// kernels/cpu/row_kernels.cpp line by line (same sums, same operand order, same NaN / zero
// rules), so the two backends compute the same expressions.
#pragma once

#include "kernels/math/cross_entropy.hpp"
#include "kernels/math/hellinger.hpp"
#include "kernels/math/jensen_shannon.hpp"
#include "kernels/math/kl.hpp"
#include "kernels/math/softmax.hpp"
#include "kernels/math/total_variation.hpp"

namespace divcheck::cuda {

// One column of a position's two distributions (p side from y, q side from x).
struct Column {
  float p, lp, q, lq;
  bool s;  // in the support (true without a support mask)
};

// p_v and lp_v of one side, as kernels/cpu/row_kernels.cpp side_columns computes them.
__device__ __forceinline__ void side_column(float z, float m, float s, float log_s, float temperature, bool prob_path,
                                            float& p, float& lp) {
  const float t = math::shifted_logit(z, m, temperature);
  if (prob_path) {
    const math::ProbAndLog pl = math::prob_path_from_shifted(t, s, log_s);
    p = pl.p;
    lp = pl.lp;
  } else {
    lp = math::log_softmax_from_shifted(t, log_s);
    p = math::f_exp(lp);
  }
}

struct RowOptions {
  bool has_support = false;
  bool capped = false;
  float max_loss = 0.0f;
  float scaling_factor = 1.0f;
};

enum class GradMode : int { values, nan, zero };

struct RowResult {
  float ell;      // the per-position loss
  GradMode mode;  // values; NaN everywhere (ell = +inf, rule 3); exact zeros (capped CE, flat)
  float factor;   // multiplies every gradient formula: coef = w g / T (CE capped: coef * slope)
};

__device__ __forceinline__ RowResult finite_or_nan(float ell, float coef) {
  return {ell, ell < math::kInf ? GradMode::values : GradMode::nan, coef};
}

struct KlPolicy {
  static constexpr int kStats = 1;  // K_p
  __device__ static void accumulate(const Column& c, float (&acc)[kStats]) {
    acc[0] = acc[0] + math::kl_term(c.p, c.lp, c.lq);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return finite_or_nan(st[0], coef);
  }
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::KlStats ks{st[0]};
    gp = f * math::kl_grad_p(c.p, c.lp, c.lq, ks);
    gq = f * math::kl_grad_q(c.p, c.q);
  }
};

struct JefferysPolicy {
  static constexpr int kStats = 5;  // ell, K_p^S, K_q^S, P_S, Q_S
  __device__ static void accumulate(const Column& c, float (&acc)[kStats]) {
    acc[0] = acc[0] + (c.s ? math::jefferys_term(c.p, c.q, c.lp, c.lq) : 0.0f);
    acc[1] = acc[1] + (c.s ? math::kl_term(c.p, c.lp, c.lq) : 0.0f);
    acc[2] = acc[2] + (c.s ? math::kl_term(c.q, c.lq, c.lp) : 0.0f);
    acc[3] = acc[3] + (c.s ? c.p : 0.0f);
    acc[4] = acc[4] + (c.s ? c.q : 0.0f);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return finite_or_nan(st[0], coef);
  }
  __device__ static void grads(const Column& c, const float* st, const RowOptions& o, float f, float& gp, float& gq) {
    const math::JefferysStats js{st[1], st[2], st[3], st[4]};
    if (o.has_support) {
      gp = f * math::jefferys_support_grad_p(c.p, c.q, c.lp, c.lq, c.s, js);
      gq = f * math::jefferys_support_grad_q(c.p, c.q, c.lp, c.lq, c.s, js);
    } else {
      gp = f * math::jefferys_grad_p(c.p, c.q, c.lp, c.lq, js);
      gq = f * math::jefferys_grad_q(c.p, c.q, c.lp, c.lq, js);
    }
  }
};

struct CrossEntropyPolicy {
  static constexpr int kStats = 1;  // ce
  __device__ static void accumulate(const Column& c, float (&acc)[kStats]) {
    acc[0] = acc[0] + math::ce_term(c.p, c.lp, c.lq);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions& o) {
    const float ce = st[0];
    if (!o.capped) return finite_or_nan(ce, coef);
    const float ell = math::capped_ce(ce, o.max_loss, o.scaling_factor);
    const float slope = math::capped_ce_slope(ce, o.max_loss, o.scaling_factor);
    if (slope == 0.0f) return {ell, GradMode::zero, 0.0f};  // the cap is flat here
    return {ell, GradMode::values, coef * slope};
  }
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::CeStats cs{st[0]};
    gp = f * math::ce_grad_p(c.p, c.lp, c.lq, cs);
    gq = f * math::ce_grad_q(c.p, c.q);
  }
};

struct JensenShannonPolicy {
  static constexpr int kStats = 2;  // J_p, J_q
  __device__ static void accumulate(const Column& c, float (&acc)[kStats]) {
    acc[0] = acc[0] + math::js_half_term(c.p, c.lp, c.lq, c.s);
    acc[1] = acc[1] + math::js_half_term(c.q, c.lq, c.lp, c.s);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return {math::js_loss(math::JsStats{st[0], st[1]}), GradMode::values, coef};
  }
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::JsStats js{st[0], st[1]};
    gp = f * math::js_grad_p(c.p, c.lp, c.lq, c.s, js);
    gq = f * math::js_grad_q(c.q, c.lp, c.lq, c.s, js);
  }
};

struct HellingerPolicy {
  static constexpr int kStats = 3;  // ell, H_p, H_q
  __device__ static void accumulate(const Column& c, float (&acc)[kStats]) {
    const float rp = math::sqrt_prob(c.lp), rq = math::sqrt_prob(c.lq);
    acc[0] = acc[0] + math::hellinger_term(rp, rq, c.s);
    acc[1] = acc[1] + math::hellinger_h(rp, rq, c.s);
    acc[2] = acc[2] + math::hellinger_h(rq, rp, c.s);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return {st[0], GradMode::values, coef};
  }
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::HellingerStats hs{st[1], st[2]};
    const float rp = math::sqrt_prob(c.lp), rq = math::sqrt_prob(c.lq);
    gp = f * math::hellinger_grad_p(c.p, rp, rq, c.s, hs);
    gq = f * math::hellinger_grad_q(c.q, rp, rq, c.s, hs);
  }
};

struct TotalVariationPolicy {
  static constexpr int kStats = 7;  // sum |p - q|, P+, P-, P0, Q+, Q-, Q0
  __device__ static void accumulate(const Column& c, float (&acc)[kStats]) {
    acc[0] = acc[0] + math::tv_abs_term(c.p, c.q, c.s);
    acc[1] = acc[1] + math::tv_class_mass(c.p, c.q, c.s, 1.0f, c.p);
    acc[2] = acc[2] + math::tv_class_mass(c.p, c.q, c.s, -1.0f, c.p);
    acc[3] = acc[3] + math::tv_class_mass(c.p, c.q, c.s, 0.0f, c.p);
    acc[4] = acc[4] + math::tv_class_mass(c.p, c.q, c.s, 1.0f, c.q);
    acc[5] = acc[5] + math::tv_class_mass(c.p, c.q, c.s, -1.0f, c.q);
    acc[6] = acc[6] + math::tv_class_mass(c.p, c.q, c.s, 0.0f, c.q);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return {0.5f * st[0], GradMode::values, coef};
  }
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::TvStats ts{st[1], st[2], st[3], st[4], st[5], st[6]};
    gp = f * math::tv_grad_p(c.p, c.q, c.s, ts);
    gq = f * math::tv_grad_q(c.p, c.q, c.s, ts);
  }
};

}  // namespace divcheck::cuda

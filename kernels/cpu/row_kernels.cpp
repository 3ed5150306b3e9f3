// The per-position row kernels of the logit-level divergences (see row_kernels.hpp).
#include "kernels/cpu/row_kernels.hpp"

#include <limits>

#include "kernels/cpu/lane_sum.hpp"
#include "kernels/math/cross_entropy.hpp"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/hellinger.hpp"
#include "kernels/math/jensen_shannon.hpp"
#include "kernels/math/kl.hpp"
#include "kernels/math/softmax.hpp"
#include "kernels/math/total_variation.hpp"

namespace divcheck::cpu {

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool in_support(const RowView& r, std::int64_t v) { return r.support == nullptr || r.support[v] != 0; }

void fill_nan(const RowView& r, const RowGrads& g) {
  for (std::int64_t v = 0; v < r.n; ++v) {
    if (g.gp) g.gp[v] = kNaN;
    if (g.gq) g.gq[v] = kNaN;
  }
}

bool wants_any(const RowGrads& g) { return g.gp != nullptr || g.gq != nullptr; }

}  // namespace

SideStats side_stats(const float* z, std::int64_t n, float temperature) {
  SideStats st;
  float m = -math::kInf;
  for (std::int64_t v = 0; v < n; ++v) {
    if (math::poisons_row(z[v])) st.poisoned = true;
    else if (z[v] > m) m = z[v];
  }
  if (st.poisoned || m == -math::kInf) {
    st.poisoned = true;
    return st;
  }
  st.m = m;
  math::FixedSum sum;  // order-independent: permuted rows get bitwise the same S
  for (std::int64_t v = 0; v < n; ++v) sum.add(math::softmax_term(z[v], m, temperature));
  st.s = sum.value();
  st.log_s = math::f_log(st.s);
  st.inv_s = 1.0f / st.s;
  return st;
}

void side_columns(const float* z, std::int64_t n, float temperature, const SideStats& st, bool prob_path, float* p,
                  float* lp) {
  for (std::int64_t v = 0; v < n; ++v) {
    const math::ProbAndLog pl = math::softmax_column(z[v], st.m, st.inv_s, st.log_s, temperature, prob_path);
    p[v] = pl.p;
    lp[v] = pl.lp;
  }
}

float kl_row(const RowView& r, const RowGrads& g, const RowOptions&) {
  const float kp = lane_sum(r.n, [&](std::int64_t v) { return math::kl_term(r.p[v], r.lp[v], r.lq[v]); });
  if (!wants_any(g)) return kp;
  if (!(kp < math::kInf)) {
    fill_nan(r, g);
    return kp;
  }
  const math::KlStats st{kp};
  for (std::int64_t v = 0; v < r.n; ++v) {
    if (g.gp) g.gp[v] = g.coef * math::kl_grad_p(r.p[v], r.lp[v], r.lq[v], st);
    if (g.gq) g.gq[v] = g.coef * math::kl_grad_q(r.p[v], r.q[v]);
  }
  return kp;
}

float jefferys_row(const RowView& r, const RowGrads& g, const RowOptions&) {
  const float ell = lane_sum(r.n, [&](std::int64_t v) {
    return in_support(r, v) ? math::jefferys_term(r.p[v], r.q[v], r.lp[v], r.lq[v]) : 0.0f;
  });
  if (!wants_any(g)) return ell;
  if (!(ell < math::kInf)) {
    fill_nan(r, g);
    return ell;
  }
  math::JefferysStats st{0.0f, 0.0f, 0.0f, 0.0f};
  if (g.gp)
    st.kp = lane_sum(r.n, [&](std::int64_t v) { return in_support(r, v) ? math::kl_term(r.p[v], r.lp[v], r.lq[v]) : 0.0f; });
  if (g.gq)
    st.kq = lane_sum(r.n, [&](std::int64_t v) { return in_support(r, v) ? math::kl_term(r.q[v], r.lq[v], r.lp[v]) : 0.0f; });
  if (r.support) {
    st.ps = lane_sum(r.n, [&](std::int64_t v) { return in_support(r, v) ? r.p[v] : 0.0f; });
    st.qs = lane_sum(r.n, [&](std::int64_t v) { return in_support(r, v) ? r.q[v] : 0.0f; });
    for (std::int64_t v = 0; v < r.n; ++v) {
      bool s = in_support(r, v);
      if (g.gp) g.gp[v] = g.coef * math::jefferys_support_grad_p(r.p[v], r.q[v], r.lp[v], r.lq[v], s, st);
      if (g.gq) g.gq[v] = g.coef * math::jefferys_support_grad_q(r.p[v], r.q[v], r.lp[v], r.lq[v], s, st);
    }
  } else {
    for (std::int64_t v = 0; v < r.n; ++v) {
      if (g.gp) g.gp[v] = g.coef * math::jefferys_grad_p(r.p[v], r.q[v], r.lp[v], r.lq[v], st);
      if (g.gq) g.gq[v] = g.coef * math::jefferys_grad_q(r.p[v], r.q[v], r.lp[v], r.lq[v], st);
    }
  }
  return ell;
}

float cross_entropy_row(const RowView& r, const RowGrads& g, const RowOptions& o) {
  const float ce = lane_sum(r.n, [&](std::int64_t v) { return math::ce_term(r.p[v], r.lp[v], r.lq[v]); });
  const float ell = o.capped ? math::capped_ce(ce, o.max_loss, o.scaling_factor) : ce;
  if (!wants_any(g)) return ell;
  float factor = g.coef;
  if (o.capped) {
    const float slope = math::capped_ce_slope(ce, o.max_loss, o.scaling_factor);
    if (slope == 0.0f) {  // the cap is flat here (ce = +inf, or sech^2 below float range)
      for (std::int64_t v = 0; v < r.n; ++v) {
        if (g.gp) g.gp[v] = 0.0f;
        if (g.gq) g.gq[v] = 0.0f;
      }
      return ell;
    }
    factor = g.coef * slope;
  } else if (!(ce < math::kInf)) {
    fill_nan(r, g);
    return ell;
  }
  const math::CeStats st{ce};
  for (std::int64_t v = 0; v < r.n; ++v) {
    if (g.gp) g.gp[v] = factor * math::ce_grad_p(r.p[v], r.lp[v], r.lq[v], st);
    if (g.gq) g.gq[v] = factor * math::ce_grad_q(r.p[v], r.q[v]);
  }
  return ell;
}

float jensen_shannon_row(const RowView& r, const RowGrads& g, const RowOptions&) {
  auto ratios = [&](std::int64_t v) { return math::js_log_ratios(r.lp[v], r.lq[v]); };
  math::JsStats st{};
  st.jp = lane_sum(r.n, [&](std::int64_t v) { return math::js_half_term(r.p[v], r.lp[v], ratios(v).ep, in_support(r, v)); });
  st.jq = lane_sum(r.n, [&](std::int64_t v) { return math::js_half_term(r.q[v], r.lq[v], ratios(v).eq, in_support(r, v)); });
  const float ell = math::js_loss(st);
  for (std::int64_t v = 0; v < r.n && wants_any(g); ++v) {
    const bool s = in_support(r, v);
    const math::JsRatios e = ratios(v);
    if (g.gp) g.gp[v] = g.coef * math::js_grad(r.p[v], e.ep, s, st.jp);
    if (g.gq) g.gq[v] = g.coef * math::js_grad(r.q[v], e.eq, s, st.jq);
  }
  return ell;
}

float hellinger_row(const RowView& r, const RowGrads& g, const RowOptions&) {
  auto rp = [&](std::int64_t v) { return math::sqrt_prob(r.lp[v]); };
  auto rq = [&](std::int64_t v) { return math::sqrt_prob(r.lq[v]); };
  const float ell = lane_sum(r.n, [&](std::int64_t v) { return math::hellinger_term(rp(v), rq(v), in_support(r, v)); });
  if (!wants_any(g)) return ell;
  math::HellingerStats st{0.0f, 0.0f};
  if (g.gp) st.hp = lane_sum(r.n, [&](std::int64_t v) { return math::hellinger_h(rp(v), rq(v), in_support(r, v)); });
  if (g.gq) st.hq = lane_sum(r.n, [&](std::int64_t v) { return math::hellinger_h(rq(v), rp(v), in_support(r, v)); });
  for (std::int64_t v = 0; v < r.n; ++v) {
    bool s = in_support(r, v);
    if (g.gp) g.gp[v] = g.coef * math::hellinger_grad_p(r.p[v], rp(v), rq(v), s, st);
    if (g.gq) g.gq[v] = g.coef * math::hellinger_grad_q(r.q[v], rp(v), rq(v), s, st);
  }
  return ell;
}

float total_variation_row(const RowView& r, const RowGrads& g, const RowOptions&) {
  const float ell =
      0.5f * lane_sum(r.n, [&](std::int64_t v) { return math::tv_abs_term(r.p[v], r.q[v], in_support(r, v)); });
  if (!wants_any(g)) return ell;
  // The class masses (total_variation.hpp) of the side(s) whose gradient is wanted.
  auto mass = [&](const float* m, float which) {
    return lane_sum(r.n, [&](std::int64_t v) { return math::tv_class_mass(r.p[v], r.q[v], in_support(r, v), which, m[v]); });
  };
  math::TvStats st{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  if (g.gp) {
    st.p_plus = mass(r.p, 1.0f);
    st.p_minus = mass(r.p, -1.0f);
    st.p_zero = mass(r.p, 0.0f);
  }
  if (g.gq) {
    st.q_plus = mass(r.q, 1.0f);
    st.q_minus = mass(r.q, -1.0f);
    st.q_zero = mass(r.q, 0.0f);
  }
  for (std::int64_t v = 0; v < r.n; ++v) {
    bool s = in_support(r, v);
    if (g.gp) g.gp[v] = g.coef * math::tv_grad_p(r.p[v], r.q[v], s, st);
    if (g.gq) g.gq[v] = g.coef * math::tv_grad_q(r.p[v], r.q[v], s, st);
  }
  return ell;
}

}  // namespace divcheck::cpu

// A plain float32 evaluation of the logit rows, tvd_prob and dcor, written from
// docs/semantics.md's forms (not from the reference's code), used only to test that the
// reference's condition scales bound the error of a real float32 implementation. Every
// operation is float32; row sums accumulate in double and are rounded once (so the test can
// check the per-element scales without the verdict's summation-depth term sigma).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace divcheck::testing_ref {

struct Float32Outputs {
  std::vector<float> loss;
  std::map<std::string, std::vector<float>> grads;
};

namespace f32detail {

struct Row {
  bool nan = false;
  std::vector<float> lp, p;
  std::vector<char> zero;
};

inline Row log_softmax(const std::vector<float>& y, float temperature) {
  Row r;
  const std::size_t V = y.size();
  r.lp.resize(V);
  r.p.resize(V);
  r.zero.resize(V);
  std::vector<float> z(V);
  float m = -INFINITY;
  for (std::size_t v = 0; v < V; ++v) {
    if (std::isnan(y[v]) || y[v] == INFINITY) r.nan = true;
    z[v] = temperature == 1.0f ? y[v] : y[v] / temperature;
    m = std::max(m, z[v]);
  }
  if (r.nan || m == -INFINITY) {
    r.nan = true;
    return r;
  }
  double s = 0;
  for (std::size_t v = 0; v < V; ++v) {
    r.zero[v] = y[v] == -INFINITY;
    r.lp[v] = z[v] - m;
    if (!r.zero[v]) s += std::exp(r.lp[v]);  // float exp
  }
  const float log_s = std::log(static_cast<float>(s));
  for (std::size_t v = 0; v < V; ++v) {
    if (r.zero[v]) {
      r.p[v] = 0.0f;
      r.lp[v] = -INFINITY;
      continue;
    }
    r.lp[v] = r.lp[v] - log_s;
    r.p[v] = std::exp(r.lp[v]);
  }
  return r;
}

inline float js_ratio(float d) {  // log(2p / (p + q)) as a function of d = lp - lq
  if (d >= -1.0f) return -std::log1p(std::expm1(-d) / 2.0f);
  return 0.69314718f + d - std::log1p(std::exp(d));
}

// One position: l, dl/dy (p side), dl/dx (q side). Returns false for l = +inf (grads NaN).
inline bool position(DivergenceId id, const Row& P, const Row& Q, const std::vector<char>& s, bool full,
                     const Params& prm, float& l, std::vector<float>& gp, std::vector<float>& gq, bool& constant) {
  const std::size_t V = P.p.size();
  gp.assign(V, 0.0f);
  gq.assign(V, 0.0f);
  constant = false;
  auto in_s = [&](std::size_t v) { return full || s[v]; };
  switch (id) {
    case DivergenceId::masked_kl_divergence:
    case DivergenceId::temperature_scaled_masked_kl_divergence: {
      double acc = 0;
      for (std::size_t v = 0; v < V; ++v) {
        if (P.zero[v]) continue;
        if (Q.zero[v]) return false;
        acc += P.p[v] * (P.lp[v] - Q.lp[v]);
      }
      l = static_cast<float>(acc);
      for (std::size_t v = 0; v < V; ++v) {
        gq[v] = Q.p[v] - P.p[v];
        gp[v] = P.zero[v] ? 0.0f : P.p[v] * ((P.lp[v] - Q.lp[v]) - l);
      }
      return true;
    }
    case DivergenceId::masked_jefferys_divergence:
    case DivergenceId::temperature_scaled_masked_jefferys_divergence:
    case DivergenceId::jefferys_divergence: {
      double acc = 0, kp = 0, kq = 0, ps = 0, qs = 0;
      for (std::size_t v = 0; v < V; ++v) {
        if (!in_s(v)) continue;
        if (P.zero[v] != Q.zero[v]) return false;
        if (P.zero[v]) continue;
        const float d = P.lp[v] - Q.lp[v];
        acc += (P.p[v] - Q.p[v]) * d;
        kp += P.p[v] * d;
        kq -= Q.p[v] * d;
        ps += P.p[v];
        qs += Q.p[v];
      }
      l = static_cast<float>(acc);
      const float Kp = static_cast<float>(kp), Kq = static_cast<float>(kq);
      const float dS = static_cast<float>(ps) - static_cast<float>(qs);
      for (std::size_t v = 0; v < V; ++v) {
        const bool zero = P.zero[v] && Q.zero[v];
        const float d = zero ? 0.0f : P.lp[v] - Q.lp[v];
        if (full) {
          gp[v] = zero ? 0.0f : P.p[v] * (d - Kp) + (P.p[v] - Q.p[v]);
          gq[v] = zero ? 0.0f : Q.p[v] * (-d - Kq) + (Q.p[v] - P.p[v]);
        } else {
          gp[v] = -(P.p[v] * (Kp + dS));
          gq[v] = Q.p[v] * (-Kq + dS);
          if (s[v] && !zero) {
            gp[v] = (P.p[v] - Q.p[v] + P.p[v] * d) + gp[v];
            gq[v] = (Q.p[v] - P.p[v] - Q.p[v] * d) + gq[v];
          }
        }
      }
      return true;
    }
    case DivergenceId::masked_cross_entropy: {
      double acc = 0;
      for (std::size_t v = 0; v < V; ++v) {
        if (P.zero[v]) continue;
        if (Q.zero[v]) {
          if (!prm.max_loss) return false;
          l = static_cast<float>(*prm.max_loss);
          constant = true;
          return true;
        }
        acc -= P.p[v] * Q.lp[v];
      }
      const float ce = static_cast<float>(acc);
      float dl = 1.0f;
      if (prm.max_loss) {
        const float M = static_cast<float>(*prm.max_loss), k = static_cast<float>(prm.scaling_factor);
        const float x = k * ce / M;
        l = M * std::tanh(x);
        const float e = std::exp(-2.0f * std::fabs(x));
        dl = k * (4.0f * e / ((1.0f + e) * (1.0f + e)));
      } else {
        l = ce;
      }
      for (std::size_t v = 0; v < V; ++v) {
        gq[v] = dl * (Q.p[v] - P.p[v]);
        gp[v] = P.zero[v] ? 0.0f : dl * (-(P.p[v] * (Q.lp[v] + ce)));
      }
      return true;
    }
    case DivergenceId::jensen_shannon_divergence: {
      std::vector<float> ep(V, 0.0f), eq(V, 0.0f);
      double acc = 0, jp = 0, jq = 0;
      for (std::size_t v = 0; v < V; ++v) {
        if (!P.zero[v]) ep[v] = Q.zero[v] ? 0.69314718f : js_ratio(P.lp[v] - Q.lp[v]);
        if (!Q.zero[v]) eq[v] = P.zero[v] ? 0.69314718f : js_ratio(Q.lp[v] - P.lp[v]);
        if (!in_s(v)) continue;
        const float tp = P.zero[v] ? 0.0f : P.p[v] * ep[v], tq = Q.zero[v] ? 0.0f : Q.p[v] * eq[v];
        acc += 0.5f * (tp + tq);
        jp += tp;
        jq += tq;
      }
      l = static_cast<float>(acc);
      const float Jp = static_cast<float>(jp), Jq = static_cast<float>(jq);
      for (std::size_t v = 0; v < V; ++v) {
        gp[v] = P.zero[v] ? 0.0f : 0.5f * (P.p[v] * ((in_s(v) ? ep[v] : 0.0f) - Jp));
        gq[v] = Q.zero[v] ? 0.0f : 0.5f * (Q.p[v] * ((in_s(v) ? eq[v] : 0.0f) - Jq));
      }
      return true;
    }
    case DivergenceId::squared_hellinger_distance: {
      std::vector<float> sp(V), sq(V);
      double acc = 0, hp = 0, hq = 0;
      for (std::size_t v = 0; v < V; ++v) {
        sp[v] = std::sqrt(P.p[v]);
        sq[v] = std::sqrt(Q.p[v]);
        if (!in_s(v)) continue;
        const float diff = sp[v] - sq[v];
        acc += 0.5f * (diff * diff);
        hp += 0.5f * (diff * sp[v]);
        hq += 0.5f * (-diff * sq[v]);
      }
      l = static_cast<float>(acc);
      const float Hp = static_cast<float>(hp), Hq = static_cast<float>(hq);
      for (std::size_t v = 0; v < V; ++v) {
        const float diff = sp[v] - sq[v];
        const float hpv = in_s(v) ? 0.5f * (diff * sp[v]) : 0.0f, hqv = in_s(v) ? 0.5f * (-diff * sq[v]) : 0.0f;
        gp[v] = hpv - P.p[v] * Hp;
        gq[v] = hqv - Q.p[v] * Hq;
      }
      return true;
    }
    case DivergenceId::total_variation: {
      std::vector<float> sg(V, 0.0f);
      double acc = 0, sp = 0, sq = 0;
      for (std::size_t v = 0; v < V; ++v) {
        if (!in_s(v)) continue;
        const float diff = P.p[v] - Q.p[v];
        sg[v] = diff > 0 ? 1.0f : (diff < 0 ? -1.0f : 0.0f);
        acc += 0.5f * std::fabs(diff);
        sp += sg[v] * P.p[v];
        sq += sg[v] * Q.p[v];
      }
      l = static_cast<float>(acc);
      const float Sp = static_cast<float>(sp), Sq = static_cast<float>(sq);
      for (std::size_t v = 0; v < V; ++v) {
        gp[v] = 0.5f * (P.p[v] * (sg[v] - Sp));
        gq[v] = -0.5f * (Q.p[v] * (sg[v] - Sq));
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace f32detail

// The nine logit rows.
inline Float32Outputs float32_logit_row(const Case& c) {
  const DivergenceInfo& d = info(c.id);
  std::string p_role, q_role, mask_role;
  for (const RoleSpec& r : d.roles) {
    if (r.kind == RoleKind::logits) (r.side == Side::p ? p_role : q_role) = std::string(r.name);
    if (r.kind == RoleKind::position_mask) mask_role = std::string(r.name);
  }
  const Tensor& y = *c.input(p_role);
  const Tensor& x = *c.input(q_role);
  const Tensor* mask = c.input(mask_role);
  const Tensor* sup = c.input("support_mask");
  const std::int64_t B = y.dim(0), T = y.dim(1), V = y.dim(2);
  const std::string red = c.params.reduction.empty() ? std::string(d.default_reduction) : c.params.reduction;
  const bool none = red == "none", token = red == "token_mean";
  const bool temp_row = c.id == DivergenceId::temperature_scaled_masked_kl_divergence ||
                        c.id == DivergenceId::temperature_scaled_masked_jefferys_divergence;
  const float temperature = temp_row ? static_cast<float>(c.params.temperature) : 1.0f;
  Float32Outputs o;
  o.loss.assign(none ? B : 1, 0.0f);
  std::vector<double> loss_acc(o.loss.size(), 0.0);
  std::vector<float>& gp_out = o.grads[p_role];
  std::vector<float>& gq_out = o.grads[q_role];
  gp_out.assign(B * T * V, 0.0f);
  gq_out.assign(B * T * V, 0.0f);
  std::int64_t n_all = 0;
  for (std::int64_t i = 0; i < B * T; ++i) n_all += !mask || mask->nonzero(i);
  for (std::int64_t b = 0; b < B; ++b) {
    std::int64_t nb = 0;
    for (std::int64_t t = 0; t < T; ++t) nb += !mask || mask->nonzero(b * T + t);
    const float g = c.grad_output.get_f32(none ? b : 0);
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t pos = b * T + t;
      if (mask && !mask->nonzero(pos)) continue;
      const float w = 1.0f / (token ? static_cast<float>(n_all) : (none ? 1.0f : static_cast<float>(B)) * nb);
      std::vector<float> yr(V), xr(V);
      std::vector<char> s(V, 1);
      bool full = true;
      for (std::int64_t v = 0; v < V; ++v) {
        yr[v] = y.get_f32(pos * V + v);
        xr[v] = x.get_f32(pos * V + v);
        if (sup) {
          s[v] = sup->nonzero(pos * V + v) ? 1 : 0;
          full = full && s[v];
        }
      }
      const f32detail::Row P = f32detail::log_softmax(yr, temperature), Q = f32detail::log_softmax(xr, temperature);
      float l = 0;
      bool constant = false;
      std::vector<float> gp, gq;
      const bool finite = !P.nan && !Q.nan && f32detail::position(c.id, P, Q, s, full, c.params, l, gp, gq, constant);
      loss_acc[none ? b : 0] += (P.nan || Q.nan) ? NAN : (finite ? w * l : INFINITY);
      const float F = w * g / temperature;
      for (std::int64_t v = 0; v < V; ++v) {
        gp_out[pos * V + v] = finite ? (constant ? 0.0f : F * gp[v]) : NAN;
        gq_out[pos * V + v] = finite ? (constant ? 0.0f : F * gq[v]) : NAN;
      }
    }
  }
  for (std::size_t k = 0; k < o.loss.size(); ++k) o.loss[k] = static_cast<float>(loss_acc[k]);
  return o;
}

// tvd_prob.
inline Float32Outputs float32_tvd_prob(const Case& c) {
  const Tensor& p = *c.input("p");
  const Tensor& q = *c.input("q");
  const Tensor* labels = c.input("labels");
  const std::int64_t N = p.dim(0), V = p.dim(1);
  const std::string red = c.params.reduction.empty() ? "batchmean" : c.params.reduction;
  Float32Outputs o;
  std::int64_t nv = 0;
  for (std::int64_t n = 0; n < N; ++n) nv += !labels || labels->get(n) != -100;
  const float k = red == "batchmean" ? 1.0f / nv : (red == "mean" ? 1.0f / (static_cast<float>(nv) * V) : 1.0f);
  o.loss.assign(red == "none" ? N * V : 1, 0.0f);
  std::vector<float>& gp = o.grads["p"];
  gp.assign(N * V, 0.0f);
  double acc = 0;
  for (std::int64_t n = 0; n < N; ++n) {
    if (labels && labels->get(n) == -100) continue;
    for (std::int64_t v = 0; v < V; ++v) {
      const float d = p.get_f32(n * V + v) - q.get_f32(n * V + v);
      const float term = 0.5f * std::fabs(d);
      if (red == "none") o.loss[n * V + v] = term;
      acc += term;
      const float g = c.grad_output.get_f32(red == "none" ? n * V + v : 0);
      gp[n * V + v] = 0.5f * (d > 0 ? 1.0f : (d < 0 ? -1.0f : 0.0f)) * (k * g);
    }
  }
  if (red != "none") o.loss[0] = nv == 0 ? 0.0f : k * static_cast<float>(acc);
  return o;
}

// fused_linear_masked_kl_divergence: projection (float32 products, sum in double rounded once,
// then / T), KL on the logits, gradients through the student branch.
inline Float32Outputs float32_fused_linear(const Case& c) {
  const Tensor& hs = *c.input("student_hidden");
  const Tensor& ht = *c.input("teacher_hidden");
  const Tensor& W = *c.input("lm_head_weight");
  const Tensor* mask = c.input("attention_mask");
  const std::int64_t B = hs.dim(0), T = hs.dim(1), H = hs.dim(2), V = W.dim(0);
  const bool token = c.params.reduction == "token_mean";
  const bool reverse = c.params.jsd_beta == 1.0;
  const float temp = static_cast<float>(c.params.temperature);
  Float32Outputs o;
  o.loss = {0.0f};
  std::vector<float>& gh = o.grads["student_hidden"];
  std::vector<double> gw_acc(V * H, 0.0);
  gh.assign(B * T * H, 0.0f);
  std::int64_t n_all = 0;
  for (std::int64_t i = 0; i < B * T; ++i) n_all += !mask || mask->nonzero(i);
  double loss = 0;
  const float g = c.grad_output.get_f32(0);
  auto project = [&](const Tensor& h, std::int64_t pos) {
    std::vector<float> z(V);
    for (std::int64_t v = 0; v < V; ++v) {
      double acc = 0;
      for (std::int64_t k = 0; k < H; ++k) acc += h.get_f32(pos * H + k) * W.get_f32(v * H + k);
      z[v] = static_cast<float>(acc) / temp;
    }
    return z;
  };
  for (std::int64_t b = 0; b < B; ++b) {
    std::int64_t nb = 0;
    for (std::int64_t t = 0; t < T; ++t) nb += !mask || mask->nonzero(b * T + t);
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t pos = b * T + t;
      if (mask && !mask->nonzero(pos)) continue;
      const float w = 1.0f / (token ? static_cast<float>(n_all) : static_cast<float>(B) * nb);
      const f32detail::Row S = f32detail::log_softmax(project(hs, pos), 1.0f);
      const f32detail::Row Tt = f32detail::log_softmax(project(ht, pos), 1.0f);
      float l = 0;
      bool constant = false;
      std::vector<float> gp, gq;
      std::vector<char> sup(V, 1);
      f32detail::position(DivergenceId::masked_kl_divergence, reverse ? S : Tt, reverse ? Tt : S, sup, true, c.params, l,
                          gp, gq, constant);
      loss += w * l;
      const float F = w * g / temp;
      const std::vector<float>& gz = reverse ? gp : gq;
      for (std::int64_t v = 0; v < V; ++v) {
        const float fg = F * gz[v];
        for (std::int64_t k = 0; k < H; ++k) {
          gw_acc[v * H + k] += fg * hs.get_f32(pos * H + k);
        }
      }
      for (std::int64_t k = 0; k < H; ++k) {
        double acc = 0;
        for (std::int64_t v = 0; v < V; ++v) acc += (F * gz[v]) * W.get_f32(v * H + k);
        gh[pos * H + k] = static_cast<float>(acc);
      }
    }
  }
  o.loss[0] = static_cast<float>(loss);
  std::vector<float>& gw = o.grads["lm_head_weight"];
  gw.assign(V * H, 0.0f);
  for (std::int64_t i = 0; i < V * H; ++i) gw[i] = static_cast<float>(gw_acc[i]);
  return o;
}

// dcor: distances, U-centring and the gradient of docs/semantics.md in float32.
inline Float32Outputs float32_dcor(const Case& c) {
  const Tensor& xs = *c.input("samples_1");
  const Tensor& ys = *c.input("samples_2");
  const Tensor& mask = *c.input("attention_mask");
  const std::int64_t BT = xs.dim(0) * xs.dim(1), D1 = xs.dim(2), D2 = ys.dim(2);
  std::vector<std::int64_t> idx;
  for (std::int64_t i = 0; i < BT; ++i)
    if (mask.nonzero(i)) idx.push_back(i);
  const std::int64_t n = static_cast<std::int64_t>(idx.size());
  Float32Outputs o;
  o.loss = {0.0f};
  std::vector<float>& gx = o.grads["samples_1"];
  std::vector<float>& gy = o.grads["samples_2"];
  gx.assign(BT * D1, 0.0f);
  gy.assign(BT * D2, 0.0f);
  if (n < 4) return o;
  const float eps = static_cast<float>(c.params.safety_factor) * std::ldexp(1.0f, -23);
  struct Side {
    std::vector<float> x, a, cen;
    std::int64_t d;
  };
  auto build = [&](const Tensor& t, std::int64_t d) {
    Side s;
    s.d = d;
    s.x.resize(n * d);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < d; ++k) s.x[i * d + k] = t.get_f32(idx[i] * d + k);
    s.a.assign(n * n, 0.0f);
    s.cen.assign(n * n, 0.0f);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        if (i == j) continue;
        double q = 0;
        for (std::int64_t k = 0; k < d; ++k) {
          const float df = s.x[i * d + k] - s.x[j * d + k];
          q += df * df;
        }
        s.a[i * n + j] = std::sqrt(static_cast<float>(q) + eps);
      }
    std::vector<float> r(n);
    double t_acc = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double acc = 0;
      for (std::int64_t j = 0; j < n; ++j) acc += s.a[i * n + j];
      r[i] = static_cast<float>(acc);
      t_acc += acc;
    }
    const float tt = static_cast<float>(t_acc);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        if (i != j)
          s.cen[i * n + j] = s.a[i * n + j] - r[i] / static_cast<float>(n - 2) - r[j] / static_cast<float>(n - 2) +
                             tt / static_cast<float>((n - 1) * (n - 2));
    return s;
  };
  const Side X = build(xs, D1), Y = build(ys, D2);
  auto inner = [&](const Side& a, const Side& b) {
    double acc = 0;
    for (std::int64_t i = 0; i < n * n; ++i) acc += a.cen[i] * b.cen[i];
    return static_cast<float>(acc) / static_cast<float>(n * (n - 3));
  };
  const float vxy = inner(X, Y), vxx = inner(X, X), vyy = inner(Y, Y);
  const float mx = std::max(vxx, 0.0f), my = std::max(vyy, 0.0f);
  const float den = std::sqrt(mx * my) + eps;
  const float ratio = vxy / den;
  o.loss[0] = std::min(std::max(ratio, 0.0f), 1.0f);
  if (!(ratio > 0.0f && ratio < 1.0f)) return o;
  const float g = c.grad_output.get_f32(0);
  const float kall = 1.0f / (static_cast<float>(n * (n - 3)) * den);
  auto side = [&](std::vector<float>& out, const Side& S, const Side& O, float v_self, float m_self, float m_other) {
    const float kappa = v_self > 0 ? std::sqrt(m_other) / std::sqrt(m_self) : 0.0f;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < S.d; ++k) {
        double acc = 0;
        for (std::int64_t j = 0; j < n; ++j) {
          if (j == i || S.a[i * n + j] == 0.0f) continue;
          const float coef = kall * (O.cen[i * n + j] - ratio * kappa * S.cen[i * n + j]) / S.a[i * n + j];
          acc += coef * (S.x[i * S.d + k] - S.x[j * S.d + k]);
        }
        out[idx[i] * S.d + k] = 2.0f * g * static_cast<float>(acc);
      }
  };
  side(gx, X, Y, vxx, mx, my);
  side(gy, Y, X, vyy, my, mx);
  return o;
}

}  // namespace divcheck::testing_ref

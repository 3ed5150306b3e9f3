// The computations behind the broken backends (see faulty_rows.hpp).
#include "tests/broken/faulty_rows.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace divcheck::broken {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string reduction_of(const Case& c) {
  return c.params.reduction.empty() ? std::string(info(c.id).default_reduction) : c.params.reduction;
}

std::string role_name(const Case& c, RoleKind kind, Side side) {
  for (const auto& r : info(c.id).roles)
    if (r.kind == kind && (side == Side::none || r.side == side)) return std::string(r.name);
  return "";
}

// exp(z) as float32 would return it: +inf above FLT_MAX, 0 below half the smallest subnormal.
double float_range_exp(double z) {
  const double e = std::exp(z);
  if (e > std::numeric_limits<float>::max()) return kInf;
  if (e < std::ldexp(1.0, -150)) return 0.0;
  return e;
}

struct Dist {
  std::vector<double> p, lp;
  bool poisoned = false;
};

// softmax and log-softmax of z / T, lp = -inf exactly for a -inf logit.
Dist distribution(const std::vector<double>& z, double temperature, bool no_max) {
  Dist d;
  const std::size_t n = z.size();
  d.p.assign(n, 0.0);
  d.lp.assign(n, -kInf);
  double m = -kInf;
  for (double v : z) {
    if (std::isnan(v) || v == kInf) d.poisoned = true;
    else m = std::max(m, v / temperature);
  }
  if (d.poisoned || m == -kInf) {
    d.poisoned = true;
    return d;
  }
  if (no_max) {  // the bug: no shift, float32's exp range
    double s = 0;
    std::vector<double> e(n);
    for (std::size_t v = 0; v < n; ++v) s += e[v] = float_range_exp(z[v] / temperature);
    for (std::size_t v = 0; v < n; ++v) {
      d.p[v] = e[v] / s;
      d.lp[v] = std::log(d.p[v]);
    }
    return d;
  }
  double s = 0;
  for (double v : z) s += std::exp(v / temperature - m);
  const double ls = std::log(s);
  for (std::size_t v = 0; v < n; ++v) {
    if (z[v] == -kInf) continue;
    d.lp[v] = (z[v] / temperature - m) - ls;
    d.p[v] = std::exp(d.lp[v]);
  }
  return d;
}

double sign(double x, bool two_way) {
  if (two_way) return x > 0 ? 1.0 : -1.0;  // the bug
  if (x > 0) return 1.0;
  if (x < 0) return -1.0;
  return x == 0 ? 0.0 : x;
}

// One position: the loss and the per-logit gradients (before the weight).
double position(DivergenceId id, const Dist& P, const Dist& Q, const std::vector<int>& s, bool two_way,
                std::vector<double>& gp, std::vector<double>& gq) {
  const std::size_t n = P.p.size();
  if (id == DivergenceId::total_variation) {
    double ell = 0, tp = 0, tq = 0;
    for (std::size_t v = 0; v < n; ++v) {
      if (!s[v]) continue;
      ell += 0.5 * std::fabs(P.p[v] - Q.p[v]);
      tp += sign(P.p[v] - Q.p[v], two_way) * P.p[v];
      tq += sign(P.p[v] - Q.p[v], two_way) * Q.p[v];
    }
    for (std::size_t v = 0; v < n; ++v) {
      const double sv = s[v] ? sign(P.p[v] - Q.p[v], two_way) : 0.0;
      gp[v] = 0.5 * P.p[v] * (sv - tp);
      gq[v] = 0.5 * Q.p[v] * (tq - sv);
    }
    return ell;
  }
  // KL(p || q)
  double ell = 0;
  for (std::size_t v = 0; v < n; ++v) {
    if (P.lp[v] == -kInf) continue;
    ell += Q.lp[v] == -kInf ? kInf : P.p[v] * (P.lp[v] - Q.lp[v]);
  }
  for (std::size_t v = 0; v < n; ++v) {
    gq[v] = ell == kInf ? kNaN : Q.p[v] - P.p[v];
    gp[v] = ell == kInf ? kNaN : (P.p[v] == 0 ? 0.0 : P.p[v] * ((P.lp[v] - Q.lp[v]) - ell));
  }
  return ell;
}

}  // namespace

bool is_per_sequence_row(const Case& c) {
  const std::string r = reduction_of(c);
  return c.id != DivergenceId::tvd_prob && c.id != DivergenceId::masked_unbiased_dcor &&
         (r == "mean" || r == "none" || r == "sequence_mean");
}

Outputs faulty_logit_rows(const Case& c, const Faults& f) {
  const std::string pr = role_name(c, RoleKind::logits, Side::p), qr = role_name(c, RoleKind::logits, Side::q);
  const Tensor& yt = *c.input(pr);
  const Tensor& xt = *c.input(qr);
  const Tensor* mask = c.input(role_name(c, RoleKind::position_mask, Side::none));
  const Tensor* support = c.input("support_mask");
  const std::int64_t B = yt.dim(0), T = yt.dim(1), V = yt.dim(2);
  const bool has_t = c.id == DivergenceId::temperature_scaled_masked_kl_divergence;
  const double temperature = has_t ? c.params.temperature : 1.0;
  const double grad_factor = (has_t && !f.no_temperature_factor) ? 1.0 / temperature : 1.0;
  const std::string red = reduction_of(c);

  std::vector<int> valid(static_cast<std::size_t>(B * T), 1);
  if (mask)
    for (std::int64_t i = 0; i < B * T; ++i) valid[i] = mask->nonzero(i);
  std::vector<std::int64_t> n_b(static_cast<std::size_t>(B), 0);
  std::int64_t n_all = 0;
  for (std::int64_t i = 0; i < B * T; ++i) {
    n_b[i / T] += valid[i];
    n_all += valid[i];
  }
  std::vector<double> g;
  for (std::int64_t i = 0; !c.wants_grad.empty() && i < c.grad_output.numel(); ++i) g.push_back(c.grad_output.get(i));

  Outputs out;
  for (const auto& role : c.wants_grad) out.grads.emplace(role, Tensor(c.input(role)->dtype(), c.input(role)->shape()));
  Tensor* grad_p = c.wants(pr) ? &out.grads.at(pr) : nullptr;
  Tensor* grad_q = c.wants(qr) ? &out.grads.at(qr) : nullptr;

  std::vector<double> ell(static_cast<std::size_t>(B * T), 0.0), y(V), x(V), gp(V), gq(V);
  std::vector<int> s(static_cast<std::size_t>(V), 1);
  for (std::int64_t i = 0; i < B * T; ++i) {
    if (!valid[i] && !f.leak_masked) continue;
    const std::int64_t b = i / T;
    for (std::int64_t v = 0; v < V; ++v) {
      y[v] = yt.get(i * V + v);
      x[v] = xt.get(i * V + v);
      if (support) s[v] = support->nonzero(i * V + v);
    }
    const Dist P = distribution(y, temperature, f.no_max_subtraction);
    const Dist Q = distribution(x, temperature, f.no_max_subtraction);
    if (P.poisoned || Q.poisoned) {
      ell[i] = kNaN;
      std::fill(gp.begin(), gp.end(), kNaN);
      std::fill(gq.begin(), gq.end(), kNaN);
    } else {
      ell[i] = position(c.id, P, Q, s, f.two_way_sign, gp, gq);
    }
    if (g.empty()) continue;
    double w = 0;
    if (red == "token_mean") w = n_all ? g[0] / static_cast<double>(n_all) : 0.0;
    else if (red == "none") w = n_b[b] ? g[b] / static_cast<double>(n_b[b]) : 0.0;
    else w = n_b[b] ? g[0] / (static_cast<double>(B) * static_cast<double>(n_b[b])) : 0.0;
    w *= grad_factor;
    for (std::int64_t v = 0; v < V; ++v) {
      if (grad_p) grad_p->set(i * V + v, w * gp[v]);
      if (grad_q) grad_q->set(i * V + v, w * gq[v]);
    }
  }
  auto counted = [&](std::int64_t i) { return valid[i] || f.leak_masked; };
  if (red == "token_mean") {
    double sum = 0;
    for (std::int64_t i = 0; i < B * T; ++i)
      if (counted(i)) sum += ell[i];
    out.loss = Tensor(DType::f32, {});
    out.loss.set(0, n_all ? sum / static_cast<double>(n_all) : 0.0);
    return out;
  }
  std::vector<double> sb(static_cast<std::size_t>(B), 0.0);
  for (std::int64_t b = 0; b < B; ++b) {
    if (n_b[b] == 0) continue;
    double sum = 0;
    for (std::int64_t t = 0; t < T; ++t)
      if (counted(b * T + t)) sum += ell[b * T + t];
    sb[b] = sum / static_cast<double>(n_b[b]);
  }
  if (red == "none") {
    out.loss = Tensor(DType::f32, {B});
    for (std::int64_t b = 0; b < B; ++b) out.loss.set(b, sb[b]);
    return out;
  }
  double mean = 0;
  for (double v : sb) mean += v;
  out.loss = Tensor(DType::f32, {});
  out.loss.set(0, mean / static_cast<double>(B));
  return out;
}

Outputs two_way_tvd_prob(const Case& c, const Backend& cpu) {
  Outputs out = cpu.run(c);
  if (!c.wants("p")) return out;
  const Tensor& p = *c.input("p");
  const Tensor& q = *c.input("q");
  const Tensor* labels = c.input("labels");
  const std::int64_t N = p.dim(0), V = p.dim(1);
  const std::string red = reduction_of(c);
  std::int64_t n_valid = 0;
  for (std::int64_t i = 0; i < N; ++i) n_valid += !labels || labels->get(i) != -100;
  double scale = 1.0;
  if (red == "batchmean") scale = n_valid ? 1.0 / static_cast<double>(n_valid) : 0.0;
  if (red == "mean") scale = n_valid ? 1.0 / (static_cast<double>(n_valid) * static_cast<double>(V)) : 0.0;
  Tensor& g = out.grads.at("p");
  for (std::int64_t i = 0; i < N; ++i) {
    if (labels && labels->get(i) == -100) continue;
    for (std::int64_t v = 0; v < V; ++v) {
      const std::int64_t k = i * V + v;
      const double half = 0.5 * (red == "none" ? c.grad_output.get(k) : scale * c.grad_output.get(0));
      g.set(k, p.get(k) > q.get(k) ? half : -half);  // the bug: no zero branch
    }
  }
  return out;
}

Outputs unguarded_sequence_mean(const Case& c, const Backend& cpu) {
  Outputs out = cpu.run(c);
  const DivergenceInfo& d = info(c.id);
  const Tensor* mask = nullptr;
  for (const auto& r : d.roles)
    if (r.kind == RoleKind::position_mask) mask = c.input(std::string(r.name));
  if (!mask) return out;  // no mask: no sequence can be empty
  const std::int64_t B = mask->dim(0), T = mask->dim(1);
  const bool none = reduction_of(c) == "none";
  for (std::int64_t b = 0; b < B; ++b) {
    std::int64_t n = 0;
    for (std::int64_t t = 0; t < T; ++t) n += mask->nonzero(b * T + t);
    if (n != 0) continue;
    // s_b = 0 / 0: NaN, and it propagates into the batch mean.
    out.loss.set(none ? b : 0, kNaN);
    // d s_b / d ell_bt = m_bt / n_b = 0 / 0: NaN at every position of the sequence.
    for (auto& [role, g] : out.grads) {
      if (d.role(role)->kind == RoleKind::weight) {  // grad_W sums over all tokens: all NaN
        for (std::int64_t i = 0; i < g.numel(); ++i) g.set(i, kNaN);
        continue;
      }
      const std::int64_t per_seq = g.numel() / B;
      for (std::int64_t i = b * per_seq; i < (b + 1) * per_seq; ++i) g.set(i, kNaN);
    }
  }
  return out;
}

}  // namespace divcheck::broken

// The double-precision model of SPEC.md's losses (see double_model.hpp).
#include "tests/cpu/double_model.hpp"

#include <algorithm>
#include <cmath>

namespace divcheck::testing {

namespace {

std::vector<double> log_softmax(const double* z, std::int64_t n, double temperature) {
  double m = -INFINITY;
  for (std::int64_t v = 0; v < n; ++v) m = std::max(m, z[v] / temperature);
  double s = 0;
  for (std::int64_t v = 0; v < n; ++v) s += std::exp(z[v] / temperature - m);
  std::vector<double> l(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) l[v] = z[v] / temperature - m - std::log(s);
  return l;
}

double kl(const std::vector<double>& lp, const std::vector<double>& lq) {
  double s = 0;
  for (std::size_t v = 0; v < lp.size(); ++v) s += std::exp(lp[v]) * (lp[v] - lq[v]);
  return s;
}

// The per-position value of a logit row.
double logit_term(const Case& c, const std::vector<double>& lp, const std::vector<double>& lq,
                  const std::vector<int>& support) {
  const std::size_t n = lp.size();
  double s = 0;
  switch (c.id) {
    case DivergenceId::masked_kl_divergence:
    case DivergenceId::temperature_scaled_masked_kl_divergence:
      return kl(lp, lq);
    case DivergenceId::masked_jefferys_divergence:
    case DivergenceId::temperature_scaled_masked_jefferys_divergence:
    case DivergenceId::jefferys_divergence:
      for (std::size_t v = 0; v < n; ++v)
        if (support[v]) s += (std::exp(lp[v]) - std::exp(lq[v])) * (lp[v] - lq[v]);
      return s;
    case DivergenceId::masked_cross_entropy: {
      for (std::size_t v = 0; v < n; ++v) s -= std::exp(lp[v]) * lq[v];
      if (!c.params.max_loss) return s;
      const double M = *c.params.max_loss, k = c.params.scaling_factor;
      return M * std::tanh(k * s / M);
    }
    case DivergenceId::jensen_shannon_divergence:
      for (std::size_t v = 0; v < n; ++v) {
        if (!support[v]) continue;
        const double p = std::exp(lp[v]), q = std::exp(lq[v]);
        const double lm = std::log((p + q) / 2);
        s += 0.5 * p * (lp[v] - lm) + 0.5 * q * (lq[v] - lm);
      }
      return s;
    case DivergenceId::squared_hellinger_distance:
      for (std::size_t v = 0; v < n; ++v)
        if (support[v]) s += 0.5 * std::pow(std::sqrt(std::exp(lp[v])) - std::sqrt(std::exp(lq[v])), 2);
      return s;
    case DivergenceId::total_variation:
      for (std::size_t v = 0; v < n; ++v)
        if (support[v]) s += 0.5 * std::fabs(std::exp(lp[v]) - std::exp(lq[v]));
      return s;
    default: return NAN;
  }
}

std::string eff_reduction(const Case& c) {
  return c.params.reduction.empty() ? std::string(info(c.id).default_reduction) : c.params.reduction;
}

// Reduce per-position values ell (B*T) with validity flags.
std::vector<double> reduce_positions(const std::string& red, std::int64_t B, std::int64_t T,
                                     const std::vector<double>& ell, const std::vector<int>& valid) {
  if (red == "token_mean") {
    double s = 0;
    int n = 0;
    for (std::size_t i = 0; i < ell.size(); ++i)
      if (valid[i]) { s += ell[i]; ++n; }
    return {n ? s / n : 0.0};
  }
  std::vector<double> sb(static_cast<std::size_t>(B), 0.0);
  for (std::int64_t b = 0; b < B; ++b) {
    double s = 0;
    int n = 0;
    for (std::int64_t t = 0; t < T; ++t)
      if (valid[b * T + t]) { s += ell[b * T + t]; ++n; }
    sb[b] = n ? s / n : 0.0;
  }
  if (red == "none") return sb;
  double m = 0;
  for (double v : sb) m += v;
  return {m / static_cast<double>(B)};
}

std::vector<int> mask_values(const Tensor* m, std::int64_t n) {
  std::vector<int> v(static_cast<std::size_t>(n), 1);
  if (m)
    for (std::int64_t i = 0; i < n; ++i) v[i] = m->nonzero(i);
  return v;
}

std::string role_of(DivergenceId id, RoleKind kind, Side side) {
  for (const auto& r : info(id).roles)
    if (r.kind == kind && (side == Side::none || r.side == side)) return std::string(r.name);
  return "";
}

std::vector<double> logit_loss(const Case& c, const RoleValues& values, std::vector<double>* scale_out) {
  const std::string pr = role_of(c.id, RoleKind::logits, Side::p), qr = role_of(c.id, RoleKind::logits, Side::q);
  const Tensor& yt = *c.input(pr);
  const std::int64_t B = yt.dim(0), T = yt.dim(1), V = yt.dim(2);
  const std::vector<double>& y = values.at(pr);
  const std::vector<double>& x = values.at(qr);
  double temperature = 1.0;
  for (auto k : info(c.id).params)
    if (k == ParamKind::temperature) temperature = c.params.temperature;
  const std::vector<int> valid = mask_values(c.input(role_of(c.id, RoleKind::position_mask, Side::none)), B * T);
  const Tensor* sm = c.input("support_mask");
  std::vector<double> ell(static_cast<std::size_t>(B * T), 0.0), scale(ell.size(), 0.0);
  for (std::int64_t i = 0; i < B * T; ++i) {
    if (!valid[i]) continue;
    const auto lp = log_softmax(y.data() + i * V, V, temperature);
    const auto lq = log_softmax(x.data() + i * V, V, temperature);
    std::vector<int> support(static_cast<std::size_t>(V), 1);
    if (sm)
      for (std::int64_t v = 0; v < V; ++v) support[v] = sm->nonzero(i * V + v);
    ell[i] = logit_term(c, lp, lq, support);
    double sc = 0;  // float error scale: every column's lp, lq carry u (|lp| + |lq|) absolute error
    for (std::int64_t v = 0; v < V; ++v) sc += (std::exp(lp[v]) + std::exp(lq[v])) * (std::fabs(lp[v]) + std::fabs(lq[v]) + 1);
    if (c.id == DivergenceId::masked_cross_entropy && c.params.max_loss) sc *= c.params.scaling_factor;
    scale[i] = sc;
  }
  if (scale_out) *scale_out = reduce_positions(eff_reduction(c), B, T, scale, valid);
  return reduce_positions(eff_reduction(c), B, T, ell, valid);
}

std::vector<double> fused_loss(const Case& c, const RoleValues& values, std::vector<double>* scale_out) {
  const Tensor& hst = *c.input("student_hidden");
  const std::int64_t B = hst.dim(0), T = hst.dim(1), H = hst.dim(2), V = c.input("lm_head_weight")->dim(0);
  const auto& hs = values.at("student_hidden");
  const auto& ht = values.at("teacher_hidden");
  const auto& w = values.at("lm_head_weight");
  // The teacher branch is detached: a finite difference perturbs only the student's W.
  const auto& wt = values.count("lm_head_weight@teacher") ? values.at("lm_head_weight@teacher") : w;
  const std::vector<int> valid = mask_values(c.input("attention_mask"), B * T);
  std::vector<double> ell(static_cast<std::size_t>(B * T), 0.0), scale(ell.size(), 0.0), zs(V), zt(V), za(V);
  for (std::int64_t i = 0; i < B * T; ++i) {
    if (!valid[i]) continue;
    for (std::int64_t v = 0; v < V; ++v) {
      double a = 0, b = 0, m = 0;
      for (std::int64_t k = 0; k < H; ++k) {
        a += hs[i * H + k] * w[v * H + k];
        b += ht[i * H + k] * wt[v * H + k];
        m += std::fabs(hs[i * H + k] * w[v * H + k]) + std::fabs(ht[i * H + k] * wt[v * H + k]);
      }
      zs[v] = a;
      zt[v] = b;
      za[v] = m / c.params.temperature;  // the projections' float error scale
    }
    const auto ls = log_softmax(zs.data(), V, c.params.temperature);
    const auto lt = log_softmax(zt.data(), V, c.params.temperature);
    ell[i] = c.params.jsd_beta == 0.0 ? kl(lt, ls) : kl(ls, lt);
    for (std::int64_t v = 0; v < V; ++v)
      scale[i] += (std::exp(ls[v]) + std::exp(lt[v])) * (std::fabs(ls[v]) + std::fabs(lt[v]) + 1 + za[v]);
  }
  if (scale_out) *scale_out = reduce_positions(eff_reduction(c), B, T, scale, valid);
  return reduce_positions(eff_reduction(c), B, T, ell, valid);
}

std::vector<double> u_centre(const std::vector<double>& x, std::int64_t n, std::int64_t dim, double eps) {
  std::vector<double> a(static_cast<std::size_t>(n * n), 0.0), r(n, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      if (i == j) continue;
      double s = 0;
      for (std::int64_t k = 0; k < dim; ++k) s += (x[i * dim + k] - x[j * dim + k]) * (x[i * dim + k] - x[j * dim + k]);
      a[i * n + j] = std::sqrt(s + eps);
      r[i] += a[i * n + j];
    }
  double tot = 0;
  for (double v : r) tot += v;
  std::vector<double> u(a.size(), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      if (i != j) u[i * n + j] = a[i * n + j] - r[i] / (n - 2) - r[j] / (n - 2) + tot / ((n - 1.0) * (n - 2.0));
  return u;
}

std::vector<double> dcor_loss(const Case& c, const RoleValues& values, std::vector<double>* scale_out) {
  if (scale_out) *scale_out = {1.0};  // the result is in [0, 1]
  const Tensor& t1 = *c.input("samples_1");
  const std::int64_t B = t1.dim(0), T = t1.dim(1), D1 = t1.dim(2), D2 = c.input("samples_2")->dim(2);
  const std::vector<int> valid = mask_values(c.input("attention_mask"), B * T);
  std::vector<double> x, y;
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < B * T; ++i) {
    if (!valid[i]) continue;
    ++n;
    for (std::int64_t k = 0; k < D1; ++k) x.push_back(values.at("samples_1")[i * D1 + k]);
    for (std::int64_t k = 0; k < D2; ++k) y.push_back(values.at("samples_2")[i * D2 + k]);
  }
  if (n < 4) return {0.0};
  const double eps = c.params.safety_factor * std::ldexp(1.0, -23);
  const auto a = u_centre(x, n, D1, eps), b = u_centre(y, n, D2, eps);
  double vxy = 0, vxx = 0, vyy = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    vxy += a[k] * b[k];
    vxx += a[k] * a[k];
    vyy += b[k] * b[k];
  }
  const double nn = static_cast<double>(n) * (n - 3);
  vxy /= nn;
  vxx /= nn;
  vyy /= nn;
  const double r = vxy / (std::sqrt(std::max(vxx, 0.0) * std::max(vyy, 0.0)) + eps);
  return {std::clamp(r, 0.0, 1.0)};
}

std::vector<double> tvd_loss(const Case& c, const RoleValues& values, std::vector<double>* scale_out) {
  const Tensor& pt = *c.input("p");
  const std::int64_t N = pt.dim(0), V = pt.dim(1);
  const Tensor* labels = c.input("labels");
  const std::string red = eff_reduction(c);
  std::vector<double> el(static_cast<std::size_t>(N * V), 0.0);
  double total = 0;
  std::int64_t n_valid = 0;
  for (std::int64_t i = 0; i < N; ++i) {
    if (labels && labels->get(i) == -100) continue;
    ++n_valid;
    for (std::int64_t v = 0; v < V; ++v) {
      el[i * V + v] = 0.5 * std::fabs(values.at("p")[i * V + v] - values.at("q")[i * V + v]);
      total += el[i * V + v];
    }
  }
  std::vector<double> r;
  if (red == "none") r = el;
  else if (n_valid == 0) r = {0.0};
  else if (red == "batchmean") r = {total / n_valid};
  else if (red == "mean") r = {total / (static_cast<double>(n_valid) * V)};
  else r = {total};
  if (scale_out) *scale_out = r;  // a sum of non-negative terms
  return r;
}

}  // namespace

RoleValues role_values(const Case& c) {
  RoleValues r;
  for (const auto& [name, t] : c.inputs) {
    if (!is_floating(t.dtype()) || info(c.id).role(name)->kind == RoleKind::support_mask) continue;
    std::vector<double> v(static_cast<std::size_t>(t.numel()));
    for (std::int64_t i = 0; i < t.numel(); ++i) v[i] = t.get(i);
    r[name] = std::move(v);
  }
  return r;
}

std::vector<double> model_loss(const Case& c, const RoleValues& values, std::vector<double>* scale) {
  switch (c.id) {
    case DivergenceId::fused_linear_masked_kl_divergence: return fused_loss(c, values, scale);
    case DivergenceId::masked_unbiased_dcor: return dcor_loss(c, values, scale);
    case DivergenceId::tvd_prob: return tvd_loss(c, values, scale);
    default: return logit_loss(c, values, scale);
  }
}

double model_objective(const Case& c, const RoleValues& values) {
  const std::vector<double> l = model_loss(c, values);
  double s = 0;
  for (std::size_t i = 0; i < l.size(); ++i) s += c.grad_output.get(static_cast<std::int64_t>(i)) * l[i];
  return s;
}

std::vector<double> model_fd_gradient(const Case& c, const std::string& role) {
  RoleValues values = role_values(c);
  if (c.id == DivergenceId::fused_linear_masked_kl_divergence) values["lm_head_weight@teacher"] = values.at("lm_head_weight");
  std::vector<double>& x = values.at(role);
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Step: relative 2^-17 (truncation error ~h^2 f''' ~ 1e-11, rounding ~1e-16/h ~ 1e-11).
    const double x0 = x[i], h = std::ldexp(std::max(1.0, std::fabs(x0)), -17);
    x[i] = x0 + h;
    const double fp = model_objective(c, values);
    x[i] = x0 - h;
    const double fm = model_objective(c, values);
    x[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

}  // namespace divcheck::testing

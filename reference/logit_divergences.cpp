// Reference for the nine logit-level rows (masked KL / Jefferys / cross-entropy, the four
// support-mask rows, the two temperature-scaled rows): one engine.
//
// Per valid position (b, t): log-softmax of both sides in R (reference/softmax.hpp), then the
// divergence's per-position value l and its derivatives dl/dz on the p side (y) and the q side
// (x) in exactly the forms of docs/semantics.md, then the reduction weight w and the upstream g:
// loss += w l, grad = (w g / T) dl/dz. Alongside every value the float32 error bound (the
// condition scale, reference/running_error.hpp) is evaluated from the same formula.
//
// Rules (docs/semantics.md): masked positions (w = 0) are never read and their gradients stay
// exactly +0; a NaN / +inf / all -inf row makes l and every gradient of the position NaN; an
// infinite KL / Jefferys / cross-entropy makes l = +inf and the position's gradients NaN, except
// a capped cross-entropy (l = max_loss, gradients exactly 0). A probability is zero "by
// structure" only where its logit is -inf; 0 * anything = 0 is applied to exactly those.
//
// Identical positions: for a row that is zero on identical inputs, a valid position whose two
// logit rows are bitwise identical (same dtype bits; the support mask is shared by both sides)
// is structurally zero: an implementation computes both sides with the same code, so every
// d = lp - lq, every p - q and every term is exactly 0. Its loss term and gradients are exact
// zeros with scale 0 (not just values that happen to be 0 in R), unless the row is a NaN row.
// Cross-entropy is not zero on identical rows (its loss is the entropy of p), but its q-side
// gradient q - p is, for the same reason: structurally zero there.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "reference/real_engine.hpp"
#include "reference/running_error.hpp"
#include "reference/logit_formulas.hpp"
#include "reference/softmax.hpp"

namespace divcheck::ref {
namespace {

enum class Formula { kl, jefferys, cross_entropy, js, hellinger, tv };

struct LogitRow {
  Formula formula;
  const char* p_role;     // y: target / clean / teacher
  const char* q_role;     // x: input / noisy / student
  const char* mask_role;  // position mask (may be optional)
  bool support;           // has a support_mask argument
  bool temperature;       // logits are divided by T
};

LogitRow row_of(DivergenceId id) {
  switch (id) {
    case DivergenceId::masked_kl_divergence:
      return {Formula::kl, "target_logits", "input_logits", "attention_mask", false, false};
    case DivergenceId::masked_jefferys_divergence:
      return {Formula::jefferys, "target_logits", "input_logits", "attention_mask", false, false};
    case DivergenceId::masked_cross_entropy:
      return {Formula::cross_entropy, "target_logits", "input_logits", "attention_mask", false, false};
    case DivergenceId::jefferys_divergence:
      return {Formula::jefferys, "clean_logits", "noisy_logits", "attention_mask", true, false};
    case DivergenceId::jensen_shannon_divergence:
      return {Formula::js, "clean_logits", "noisy_logits", "attention_mask", true, false};
    case DivergenceId::squared_hellinger_distance:
      return {Formula::hellinger, "clean_logits", "noisy_logits", "attention_mask", true, false};
    case DivergenceId::total_variation:
      return {Formula::tv, "clean_logits", "noisy_logits", "attention_mask", true, false};
    case DivergenceId::temperature_scaled_masked_kl_divergence:
      return {Formula::kl, "teacher_logits", "student_logits", "position_mask", false, true};
    case DivergenceId::temperature_scaled_masked_jefferys_divergence:
      return {Formula::jefferys, "teacher_logits", "student_logits", "position_mask", false, true};
    default:
      throw InvalidArgument("divergence", std::string(name_of(id)), "is not a logit-level divergence");
  }
}

// True when the two logit rows [base, base + V) are bitwise identical (overridden inputs, as
// in the finite-difference tests, are compared by value).
template <class R>
bool identical_rows(const RoleView<R>& a, const RoleView<R>& b, std::int64_t base, std::int64_t V) {
  if (a.override_values || b.override_values) {
    for (std::int64_t v = 0; v < V; ++v)
      if (!(a.at(base + v) == b.at(base + v))) return false;
    return true;
  }
  const std::size_t es = element_size(a.tensor->dtype());
  if (a.tensor->dtype() != b.tensor->dtype()) return false;
  return std::memcmp(a.tensor->data() + base * static_cast<std::int64_t>(es),
                     b.tensor->data() + base * static_cast<std::int64_t>(es), static_cast<std::size_t>(V) * es) == 0;
}

// The NaN-row rule of docs/semantics.md (as compute_softmax_row decides it): a NaN or +inf
// logit, or no finite logit.
template <class R>
bool poisoned_row(const std::vector<R>& y, std::int64_t V) {
  bool any_finite = false;
  for (std::int64_t v = 0; v < V; ++v) {
    if (is_nan(y[v]) || (is_inf(y[v]) && y[v] > 0)) return true;
    any_finite = any_finite || !is_inf(y[v]);
  }
  return !any_finite;
}

}  // namespace

template <class R>
RealResult<R> logit_divergence_real(const RealInputs<R>& in) {
  const Case& c = *in.c;
  const LogitRow row = row_of(c.id);
  const RoleView<R> yv = in.view(row.p_role), xv = in.view(row.q_role);
  const Tensor* mask = c.input(row.mask_role);
  const Tensor* support = row.support ? c.input("support_mask") : nullptr;
  const std::int64_t B = yv.tensor->dim(0), T = yv.tensor->dim(1), V = yv.tensor->dim(2);
  const std::string red = effective_reduction(c);
  const bool none = red == "none", token_mean = red == "token_mean";

  // Reduction weights w_bt (docs/semantics.md), exact rationals in R.
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(B * T));
  for (std::int64_t i = 0; i < B * T; ++i) valid[i] = mask ? mask->nonzero(i) : 1;
  std::vector<R> w(static_cast<std::size_t>(B * T), R(0));
  std::vector<double> wd(static_cast<std::size_t>(B * T), 0.0);
  std::int64_t n_all = 0;
  for (auto m : valid) n_all += m;
  for (std::int64_t b = 0; b < B; ++b) {
    std::int64_t nb = 0;
    for (std::int64_t t = 0; t < T; ++t) nb += valid[b * T + t];
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t i = b * T + t;
      if (!valid[i]) continue;
      R den = token_mean ? R(n_all) : (none ? R(nb) : R(B) * R(nb));
      w[i] = R(1) / den;
      wd[i] = to_double(w[i]);
    }
  }

  RealResult<R> res;
  const std::int64_t n_loss = none ? B : 1;
  res.loss.resize(n_loss);
  const bool want_p = c.wants(row.p_role), want_q = c.wants(row.q_role);
  RealTensor<R>* gp_out = nullptr;
  RealTensor<R>* gq_out = nullptr;
  if (want_p) (gp_out = &res.grads[row.p_role])->resize(B * T * V);
  if (want_q) (gq_out = &res.grads[row.q_role])->resize(B * T * V);
  auto upstream = [&](std::int64_t b) -> double {
    if (!want_p && !want_q) return 0.0;
    return c.grad_output.get(none ? b : 0);
  };

  const double temperature = row.temperature ? c.params.temperature : 1.0;
  const bool scaled = row.temperature && temperature != 1.0;
  const R temp_r = R(temperature);
  const Err temp_err = scaled ? param_err(temperature) : exact(1.0);
  const DivergenceInfo& di = info(c.id);
  const bool zero_on_identical = di.props.zero_on_identical;
  // (c + sigma(V)) u: the TV near-tie threshold, the unit of the square-root bound and of the
  // second-order terms of Jefferys' and Hellinger's loss terms.
  const double amb_threshold = (di.tolerance.grad_c + summation_depth_of(V)) * kU32;

  std::vector<R> yrow(static_cast<std::size_t>(V)), xrow(static_cast<std::size_t>(V));
  std::vector<std::uint8_t> srow(static_cast<std::size_t>(V), 1);
  SoftmaxRow<R> P, Q;
  PositionScratch<R> ps;
  ps.resize(V);
  std::vector<ErrSum> loss_err(static_cast<std::size_t>(n_loss));

  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t k = none ? b : 0;
    const double g = upstream(b);
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t pos = b * T + t;
      if (!valid[pos]) continue;  // inert: never read
      const std::int64_t base = pos * V;
      for (std::int64_t v = 0; v < V; ++v) {
        yrow[v] = yv.at(base + v);
        xrow[v] = xv.at(base + v);
      }
      bool full = true;
      if (support) {
        for (std::int64_t v = 0; v < V; ++v) {
          srow[v] = support->nonzero(base + v) ? 1 : 0;
          full = full && srow[v];
        }
      }
      auto fill_grads = [&](const R& val) {
        for (std::int64_t v = 0; v < V; ++v) {
          if (gp_out) gp_out->value[base + v] = val;
          if (gq_out) gq_out->value[base + v] = val;
        }
      };
      const bool identical = identical_rows(yv, xv, base, V);
      if (identical && zero_on_identical) {
        // Structurally zero (loss term 0, gradients +0 with scale 0, as initialised), unless
        // the row is a NaN row (a NaN or +inf logit, or no finite logit).
        if (!poisoned_row(yrow, V)) continue;
        res.loss.value[k] += r_nan<R>();
        fill_grads(r_nan<R>());
        continue;
      }
      compute_softmax_row<R>(yrow.data(), V, scaled ? &temp_r : nullptr, nullptr, P);
      compute_softmax_row<R>(xrow.data(), V, scaled ? &temp_r : nullptr, nullptr, Q);
      if (P.nan_row || Q.nan_row) {
        res.loss.value[k] += r_nan<R>();
        fill_grads(r_nan<R>());
        continue;
      }
      LogitFormulas<R> f(P, Q, srow.data(), full, V, ps);
      Status st = Status::finite;
      switch (row.formula) {
        case Formula::kl: st = f.kl(); break;
        case Formula::jefferys: st = f.jefferys(amb_threshold); break;
        case Formula::cross_entropy: st = f.cross_entropy(c.params.max_loss, c.params.scaling_factor); break;
        case Formula::js: st = f.js(); break;
        case Formula::hellinger: st = f.hellinger(amb_threshold); break;
        case Formula::tv: st = f.tv(amb_threshold); break;
      }
      if (st == Status::infinite) {
        res.loss.value[k] += r_inf<R>();
        fill_grads(r_nan<R>());
        continue;
      }
      // loss += w l; the weight is rounded once in float32 (1 / (B n_b) or 1 / N).
      res.loss.value[k] += w[pos] * ps.loss;
      loss_err[k].add(mul(rounded(wd[pos]), ps.loss_err));
      if (st == Status::constant) continue;  // gradients stay exactly 0
      if (identical && row.formula == Formula::cross_entropy) {  // q - p of identical rows
        std::fill(ps.gq.begin(), ps.gq.end(), R(0));
        std::fill(ps.gq_e.begin(), ps.gq_e.end(), 0.0);
      }
      // grad = F dl/dz with F = w g / T.
      const R F = w[pos] * R(g) / temp_r;
      const double Fd = to_double(F);
      const Err FE = div(mul(rounded(wd[pos]), exact(g)), temp_err);
      for (std::int64_t v = 0; v < V; ++v) {
        if (gp_out) {
          gp_out->value[base + v] = F * ps.gp[v];
          gp_out->scale[base + v] = mul(FE, Err{to_double(ps.gp[v]), ps.gp_e[v]}).e;
          gp_out->jump[base + v] = std::fabs(Fd) * ps.jp[v];
        }
        if (gq_out) {
          gq_out->value[base + v] = F * ps.gq[v];
          gq_out->scale[base + v] = mul(FE, Err{to_double(ps.gq[v]), ps.gq_e[v]}).e;
          gq_out->jump[base + v] = std::fabs(Fd) * ps.jq[v];
        }
      }
    }
  }
  for (std::int64_t k = 0; k < n_loss; ++k) res.loss.scale[k] = loss_err[k].get().e;
  return res;
}

template RealResult<Float128> logit_divergence_real(const RealInputs<Float128>&);
template RealResult<Mpfr50> logit_divergence_real(const RealInputs<Mpfr50>&);

}  // namespace divcheck::ref

// The per-position driver of the logit-level rows (see logit_divergences.hpp).
//
// For every valid position (b, t), in order: both logit rows are read (masked positions are
// never read), pass 1 runs on each side, a NaN row (docs/semantics.md rule 1) gets loss NaN
// and NaN gradients on both sides, otherwise the columns are formed and the row kernel
// computes the loss and the gradients scaled by coef = w g / T, which are written once,
// rounded to the logits' dtype. Gradient rows of masked positions stay exactly +0.
#include "kernels/cpu/logit_divergences.hpp"

#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/reduction.hpp"
#include "kernels/cpu/tensor_rows.hpp"

namespace divcheck::cpu {

namespace {

struct LogitRoles {
  std::string p, q, mask, support;  // empty when the row has no such role
};

LogitRoles find_roles(const DivergenceInfo& d) {
  LogitRoles r;
  for (const auto& role : d.roles) {
    if (role.kind == RoleKind::logits && role.side == Side::p) r.p = role.name;
    if (role.kind == RoleKind::logits && role.side == Side::q) r.q = role.name;
    if (role.kind == RoleKind::position_mask) r.mask = role.name;
    if (role.kind == RoleKind::support_mask) r.support = role.name;
  }
  return r;
}

}  // namespace

Outputs run_logit_divergence(const Case& c, RowKernel kernel) {
  const DivergenceInfo& d = info(c.id);
  const LogitRoles roles = find_roles(d);
  const Tensor& yp = *c.input(roles.p);
  const Tensor& xq = *c.input(roles.q);
  const Tensor* mask = roles.mask.empty() ? nullptr : c.input(roles.mask);
  const Tensor* support = roles.support.empty() ? nullptr : c.input(roles.support);
  const std::int64_t B = yp.dim(0), T = yp.dim(1), V = yp.dim(2);

  const bool has_temperature = d.accepts(ParamKind::temperature);
  const float temperature = has_temperature ? static_cast<float>(c.params.temperature) : 1.0f;
  const double inv_temperature = has_temperature ? 1.0 / c.params.temperature : 1.0;
  const bool prob_path = d.accepts(ParamKind::log_target) && !c.params.log_target;
  RowOptions opt;
  if (d.accepts(ParamKind::max_loss) && c.params.max_loss) {
    opt.capped = true;
    opt.max_loss = static_cast<float>(*c.params.max_loss);
    opt.scaling_factor = static_cast<float>(c.params.scaling_factor);
  }

  PositionReduction red(c, reduction_kind(effective_reduction(c)), B, T, mask, inv_temperature);
  Outputs out;
  out.grads = zero_gradients(c);
  Tensor* grad_p = c.wants(roles.p) ? &out.grads.at(roles.p) : nullptr;
  Tensor* grad_q = c.wants(roles.q) ? &out.grads.at(roles.q) : nullptr;

  const auto n = static_cast<std::size_t>(V);
  std::vector<float> zp(n), zq(n), p(n), lp(n), q(n), lq(n), gp(n), gq(n);
  std::vector<std::uint8_t> supp(support ? n : 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();

  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t t = 0; t < T; ++t) {
      if (!red.valid(b, t)) continue;  // inert: never read, gradients stay +0
      const std::int64_t off = (b * T + t) * V;
      load_f32(yp, off, V, zp.data());
      load_f32(xq, off, V, zq.data());
      const SideStats sp = side_stats(zp.data(), V, temperature);
      const SideStats sq = side_stats(zq.data(), V, temperature);
      if (sp.poisoned || sq.poisoned) {
        red.set_loss(b, t, nan);
        if (grad_p) fill_f32(*grad_p, off, V, nan);
        if (grad_q) fill_f32(*grad_q, off, V, nan);
        continue;
      }
      side_columns(zp.data(), V, temperature, sp, prob_path, p.data(), lp.data());
      side_columns(zq.data(), V, temperature, sq, prob_path, q.data(), lq.data());
      if (support) load_mask_row(*support, off, V, supp.data());

      const RowView view{V, p.data(), lp.data(), q.data(), lq.data(), support ? supp.data() : nullptr};
      const RowGrads grads{grad_p ? gp.data() : nullptr, grad_q ? gq.data() : nullptr, red.coef(b, t)};
      red.set_loss(b, t, kernel(view, grads, opt));
      if (grad_p) store_f32(*grad_p, off, V, gp.data());
      if (grad_q) store_f32(*grad_q, off, V, gq.data());
    }
  }
  out.loss = red.loss();
  return out;
}

}  // namespace divcheck::cpu

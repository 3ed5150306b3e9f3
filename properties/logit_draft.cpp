// Shared draws for the logit-row families and the final Case assembly (see logit_draft.hpp).
#include "properties/logit_draft.hpp"

#include <algorithm>

#include "properties/family_table.hpp"
#include "properties/gen_primitives.hpp"

namespace divcheck::pgen {

LogitRow logit_row(const DivergenceInfo& d) {
  LogitRow r;
  r.d = &d;
  for (const auto& role : d.roles) {
    if (role.kind == RoleKind::logits && role.side == Side::q) r.q = std::string(role.name);
    if (role.kind == RoleKind::logits && role.side == Side::p) r.p = std::string(role.name);
    if (role.kind == RoleKind::position_mask) {
      r.mask = std::string(role.name);
      r.mask_optional = role.optional;
    }
    if (role.kind == RoleKind::support_mask) r.support = true;
  }
  for (auto k : d.params) {
    r.temperature |= k == ParamKind::temperature;
    r.log_target |= k == ParamKind::log_target;
    r.max_loss |= k == ParamKind::max_loss;
    r.reduction |= k == ParamKind::reduction;
  }
  return r;
}

LogitDraft draw_layout(const LayoutOptions& o) {
  LogitDraft dr;
  const VocabDraw vd = draw_vocab(o.min_v);
  dr.V = vd.v;
  if (vd.rows_cap > 0) {
    const std::int64_t cap = std::max(vd.rows_cap, o.min_rows);
    dr.B = *int_toward(1, std::min<std::int64_t>(2, cap), 1);
    dr.T = *int_toward(1, std::max<std::int64_t>(1, cap / dr.B), 1);
  } else {
    dr.B = *sized_int(1, 4);
    dr.T = *sized_int(1, 8);
  }
  while (dr.B * dr.T < o.min_rows) ++dr.T;
  dr.dt = o.narrow_only ? *gen_narrow_dtype() : *gen_float_dtype();
  return dr;
}

void draw_params(const LogitRow& row, LogitDraft& dr) {
  Params& p = dr.params;
  if (row.log_target) {
    const bool def = row.d->default_log_target;
    p.log_target = *weighted<bool>({{3, def}, {1, !def}});
  }
  if (row.max_loss) {
    const bool capped = *chance(1, 4);
    if (capped)
      p.max_loss = *weighted<double>({{2, 1.0}, {1, 0.5}, {1, 5.0}, {1, 20.0}});
    p.scaling_factor = *weighted<double>({{4, 1.0}, {1, 0.5}, {1, 2.0}, {1, 3.0}});
  }
  if (row.temperature) p.temperature = *weighted<double>({{3, 1.0}, {1, 0.5}, {1, 2.0}, {1, 0.7}, {1, 3.0}});
  if (row.reduction) {
    std::vector<std::string> reds;
    for (auto r : row.d->reductions) reds.emplace_back(r);
    p.reduction = *one_of_values(reds);
  }
}

double draw_scale() { return *one_of_values<double>({1.0, 0.1, 10.0, 100.0}); }

void draw_random_logits(LogitDraft& dr, double scale) {
  const std::size_t n = static_cast<std::size_t>(dr.rows() * dr.V);
  dr.q = draw_values(n, logit_dist(scale), dr.dt);
  dr.p = draw_values(n, logit_dist(scale), dr.dt);
}

std::vector<bool> draw_flags(std::size_t n, int num, int den) {
  if (n <= kShrinkableValues) return *rc::gen::container<std::vector<bool>>(n, chance(num, den));
  SeededRng rng(draw_seed());
  std::vector<bool> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = rng.chance(num, den);
  return f;
}

void draw_position_mask(const LogitRow& row, LogitDraft& dr, bool force, int valid_num, int valid_den) {
  dr.has_mask = force || !row.mask_optional || *chance(3, 4);
  if (!dr.has_mask) return;
  dr.mask_dt = *gen_mask_dtype();
  dr.mask = draw_mask(static_cast<std::size_t>(dr.rows()), dr.mask_dt, valid_num, valid_den);
}

void draw_optional_support(const LogitRow& row, LogitDraft& dr) {
  if (!row.support) return;
  dr.has_support = *chance(1, 3);
  if (!dr.has_support) return;
  dr.support_dt = *gen_mask_dtype();
  const std::int64_t keep = draw_valid_value(dr.support_dt);
  const auto dropped = draw_flags(static_cast<std::size_t>(dr.rows() * dr.V), 1, 4);
  dr.support.resize(dropped.size());
  for (std::size_t i = 0; i < dropped.size(); ++i) dr.support[i] = dropped[i] ? 0 : keep;
}

Case finish_logit_case(const LogitRow& row, LogitDraft&& dr, std::string_view family) {
  Case c;
  c.id = row.d->id;
  c.params = dr.params;
  const Shape s3 = {dr.B, dr.T, dr.V};
  c.inputs[row.q] = float_tensor(dr.dt, s3, dr.q);
  c.inputs[row.p] = float_tensor(dr.dt, s3, dr.p);
  if (dr.has_mask) c.inputs[row.mask] = int_tensor(dr.mask_dt, {dr.B, dr.T}, dr.mask);
  if (dr.has_support) c.inputs["support_mask"] = int_tensor(dr.support_dt, s3, dr.support);
  c.wants_grad = draw_wants(*row.d, true);
  c.grad_output = draw_grad_output(loss_shape(c), dr.grad_style);
  c.provenance.family = std::string(family);
  validate_case(c);
  return c;
}

}  // namespace divcheck::pgen

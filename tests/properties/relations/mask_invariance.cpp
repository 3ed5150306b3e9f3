// Metamorphic mask invariance: whatever a masked position (or an ignored tvd_prob row) holds,
// the outputs are bitwise the same. The case is given at least one masked position (a mask or
// labels are added when the optional one is absent), then every masked value is replaced by
// garbage (NaN, +-inf, 1e30, random values; support bits too); loss and gradients must be
// bitwise equal to those of the case before the replacement.
#include <cmath>

#include "properties/case_builder.hpp"
#include "properties/float_gen.hpp"
#include "properties/gen_primitives.hpp"
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {

namespace {

struct MaskLayout {
  std::string mask_role;            // position mask or labels
  bool labels = false;              // tvd_prob: ignore_index rows
  std::vector<std::string> per_position;  // roles whose leading dims are the positions
};

MaskLayout layout_of(DivergenceId id) {
  MaskLayout m;
  const DivergenceInfo& d = info(id);
  for (const auto& r : d.roles) {
    if (r.kind == RoleKind::position_mask) m.mask_role = std::string(r.name);
    if (r.kind == RoleKind::labels) {
      m.mask_role = std::string(r.name);
      m.labels = true;
    }
    if (r.kind == RoleKind::logits || r.kind == RoleKind::hidden || r.kind == RoleKind::samples ||
        r.kind == RoleKind::probabilities || r.kind == RoleKind::support_mask)
      m.per_position.emplace_back(r.name);
  }
  return m;
}

// Positions of a case: B*T (or N), from the first per-position tensor.
std::int64_t positions(const Case& c, const MaskLayout& m) {
  const Tensor& t = c.inputs.at(m.per_position.front());
  return m.labels ? t.dim(0) : t.dim(0) * t.dim(1);
}

}  // namespace

void mask_invariance_property(const Backend& backend, DivergenceId id) {
  Case c = *gen_case_of(id, [](std::string_view) { return true; });
  tag_case(c);
  const MaskLayout m = layout_of(id);
  const std::int64_t n = positions(c, m);
  if (!c.input(m.mask_role)) {  // add the optional mask/labels, everything valid
    Tensor t(m.labels ? DType::i64 : DType::boolean, m.labels ? Shape{n} : Shape{c.inputs.at(m.per_position.front()).dim(0), c.inputs.at(m.per_position.front()).dim(1)});
    for (std::int64_t i = 0; i < n; ++i) t.set(i, m.labels ? 0 : 1);
    c.inputs[m.mask_role] = t;
  }
  Tensor& mask = c.inputs.at(m.mask_role);
  auto masked = [&](std::int64_t i) { return m.labels ? mask.get(i) == -100 : !mask.nonzero(i); };
  bool any = false;
  for (std::int64_t i = 0; i < n; ++i) any = any || masked(i);
  if (!any) mask.set(*pgen::int_toward(0, n - 1, 0), m.labels ? -100 : 0);
  validate_case(c);

  Case g = c;  // garbage at every masked position (drawn from a seed: no per-element picks)
  const auto garbage = pgen::garbage_dist();
  pgen::SeededRng rng(pgen::draw_seed());
  for (const auto& role : m.per_position) {
    if (!g.input(role)) continue;  // an absent optional support mask
    Tensor& t = g.inputs.at(role);
    const std::int64_t per = t.numel() / n;
    const bool is_mask = info(id).role(role)->kind == RoleKind::support_mask;
    for (std::int64_t i = 0; i < n; ++i) {
      if (!masked(i)) continue;
      for (std::int64_t k = 0; k < per; ++k) {
        double v;
        if (is_mask) v = static_cast<double>(rng.range(0, 1));
        else if (rng.chance(1, 4)) v = 8.0 * rng.unit() - 4.0;
        else v = garbage.seeded(rng);
        t.set(i * per + k, v);
      }
    }
  }
  const Outputs oc = compute(backend, c), og = compute(backend, g);
  assert_empty(compare_bitwise(og.loss, oc.loss, "loss"), c);
  for (const auto& role : c.wants_grad) assert_empty(compare_bitwise(og.grads.at(role), oc.grads.at(role), "grad " + role), c);
}

}  // namespace divcheck::props

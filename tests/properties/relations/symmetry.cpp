// Metamorphic symmetry: for every row declared symmetric, swapping the two distributions (the
// p-side and q-side logits, samples_1 and samples_2, p and q) leaves the loss unchanged, and the
// gradient of each side becomes the gradient of the other. CPU outputs of the two cases are
// compared within the sum of their two bounds (both are within bound of the same exact value).
#include "relations/relations.hpp"
#include "support/property_support.hpp"
#include "support/tensor_ops.hpp"

namespace divcheck::props {

namespace {

// The two roles that swap.
std::pair<std::string, std::string> swapped_roles(DivergenceId id) {
  if (id == DivergenceId::masked_unbiased_dcor) return {"samples_1", "samples_2"};
  if (id == DivergenceId::tvd_prob) return {"p", "q"};
  const DivergenceInfo& d = info(id);
  std::string q, p;
  for (const auto& r : d.roles) {
    if (r.kind == RoleKind::logits && r.side == Side::q) q = std::string(r.name);
    if (r.kind == RoleKind::logits && r.side == Side::p) p = std::string(r.name);
  }
  return {q, p};
}

}  // namespace

void symmetry_property(const Backend& backend, DivergenceId id) {
  Case c = *gen_case_of(id, [](std::string_view) { return true; });
  tag_case(c);
  const auto [a, b] = swapped_roles(id);
  if (id == DivergenceId::tvd_prob) c.wants_grad.clear();  // q has no gradient: compare losses
  Case s = c;
  std::swap(s.inputs.at(a), s.inputs.at(b));
  for (auto& w : s.wants_grad) w = w == a ? b : (w == b ? a : w);
  const Outputs oc = compute(backend, c), os = compute(backend, s);
  const Bounds bc = bounds_of(c, reference_of(c)), bs = bounds_of(s, reference_of(s));
  assert_empty(compare_within(os.loss, oc.loss, add_bounds(bc.loss, bs.loss), "loss"), c);
  for (const auto& role : c.wants_grad) {
    const std::string other = role == a ? b : a;
    assert_empty(compare_within(os.grads.at(other), oc.grads.at(role), add_bounds(bc.grads.at(role), bs.grads.at(other)),
                                "grad " + role + " vs swapped grad " + other),
                 c);
  }
}

}  // namespace divcheck::props

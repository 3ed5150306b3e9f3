// Metamorphic vocabulary permutation: permuting every V-indexed tensor alike (both logit
// tensors and the support mask; the rows of lm_head_weight; the columns of p and q) leaves the
// loss unchanged and permutes the gradients the same way (the (N, V) "none" loss of tvd_prob
// too). CPU outputs compared within the sum of the two cases' bounds.
#include "properties/gen_primitives.hpp"
#include "relations/relations.hpp"
#include "support/property_support.hpp"
#include "support/tensor_ops.hpp"

namespace divcheck::props {

namespace {

// The axis along which each role's tensor is V-indexed (-1: not V-indexed).
int vocab_axis(DivergenceId id, const std::string& role) {
  if (id == DivergenceId::fused_linear_masked_kl_divergence) return role == "lm_head_weight" ? 0 : -1;
  if (id == DivergenceId::tvd_prob) return (role == "p" || role == "q") ? 1 : -1;
  const RoleSpec* r = info(id).role(role);
  return (r && (r->kind == RoleKind::logits || r->kind == RoleKind::support_mask)) ? 2 : -1;
}

std::int64_t vocab_size(const Case& c) {
  if (c.id == DivergenceId::fused_linear_masked_kl_divergence) return c.inputs.at("lm_head_weight").dim(0);
  if (c.id == DivergenceId::tvd_prob) return c.inputs.at("p").dim(1);
  return c.inputs.at(std::string(info(c.id).roles.front().name)).dim(2);
}

}  // namespace

void permutation_property(const Backend& backend, DivergenceId id) {
  const Case c = *gen_case_of(id, [](std::string_view) { return true; });
  tag_case(c);
  const std::int64_t V = vocab_size(c);
  const auto perm = permutation_from_seed(V, pgen::draw_seed());
  RC_CLASSIFY(V > 1, "non-trivial permutation");
  Case s = c;
  for (auto& [role, t] : s.inputs) {
    const int ax = vocab_axis(id, role);
    if (ax >= 0) t = permute_axis(t, static_cast<std::size_t>(ax), perm);
  }
  const bool loss_per_element = id == DivergenceId::tvd_prob && c.params.reduction == "none";
  if (loss_per_element) s.grad_output = permute_axis(c.grad_output, 1, perm);
  const Outputs oc = compute(backend, c), os = compute(backend, s);
  const Bounds bc = bounds_of(c, reference_of(c)), bs = bounds_of(s, reference_of(s));
  if (loss_per_element) {
    assert_empty(compare_within(os.loss, permute_axis(oc.loss, 1, perm),
                                add_bounds(permute_axis(bc.loss, oc.loss.shape(), 1, perm), bs.loss), "loss"),
                 c);
  } else {
    assert_empty(compare_within(os.loss, oc.loss, add_bounds(bc.loss, bs.loss), "loss"), c);
  }
  for (const auto& role : c.wants_grad) {
    const Tensor& g = oc.grads.at(role);
    const int ax = vocab_axis(id, role);
    const Tensor gp = ax >= 0 ? permute_axis(g, static_cast<std::size_t>(ax), perm) : g;
    const std::vector<double> bp =
        ax >= 0 ? permute_axis(bc.grads.at(role), g.shape(), static_cast<std::size_t>(ax), perm) : bc.grads.at(role);
    assert_empty(compare_within(os.grads.at(role), gp, add_bounds(bp, bs.grads.at(role)), "grad " + role), c);
  }
}

}  // namespace divcheck::props

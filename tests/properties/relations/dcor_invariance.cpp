// Metamorphic: distance correlation is invariant to rotating either sample set (Y -> Y R, R
// orthogonal) and to scaling it (Y -> c Y, c > 0). R is a signed permutation and c a power of
// two, so the transformed samples are exact. A rotation preserves every distance, so the loss
// is unchanged with the default epsilon and the gradient rotates with the samples (G -> G R).
// Scaling multiplies every distance by c, which is exact invariance only without the epsilon
// inside the distances, so scaled cases use safety_factor = 0 and compare the loss.
#include <cmath>

#include "properties/gen_primitives.hpp"
#include "relations/relations.hpp"
#include "support/property_support.hpp"
#include "support/tensor_ops.hpp"

namespace divcheck::props {

namespace {

// x -> c * x R for every row of a (B, T, D) tensor; R[k][perm[k]] = sign[k]. Returns false if a
// value is not exact after the transform.
bool transform(Tensor& t, const std::vector<std::int64_t>& perm, const std::vector<int>& sign, double c) {
  const std::int64_t D = t.dim(2), rows = t.numel() / D;
  Tensor out(t.dtype(), t.shape());
  bool exact = true;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < D; ++k) {
      const double v = c * sign[static_cast<std::size_t>(k)] * t.get(r * D + k);
      const std::int64_t j = r * D + perm[static_cast<std::size_t>(k)];
      out.set(j, v);
      exact = exact && (out.get(j) == v || std::isnan(v));
    }
  t = out;
  return exact;
}

}  // namespace

void dcor_invariance_property(const Backend& backend) {
  const DivergenceId id = DivergenceId::masked_unbiased_dcor;
  Case c = *gen_case_of(id, [](std::string_view f) { return !is_nan_family(f) && f != "masked_garbage"; });
  tag_case(c);
  const double scale = *pgen::weighted<double>({{4, 1.0}, {1, 2.0}, {1, 0.5}, {1, 4.0}, {1, 0.25}});
  const std::int64_t which = *pgen::int_toward(0, 2, 0);  // 0: samples_2, 1: samples_1, 2: both
  if (scale != 1.0) {
    c.params.safety_factor = 0.0;
    c.wants_grad.clear();
  }
  Case s = c;
  std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<int>>> rot;
  bool exact = true;
  for (const char* role : {"samples_1", "samples_2"}) {
    const bool apply = which == 2 || (which == 0) == (std::string(role) == "samples_2");
    if (!apply) continue;
    const std::int64_t D = c.inputs.at(role).dim(2);
    const auto perm = permutation_from_seed(D, pgen::draw_seed());
    std::vector<int> sign(static_cast<std::size_t>(D));
    for (auto& x : sign) x = *pgen::chance(1, 2) ? -1 : 1;
    exact = transform(s.inputs.at(role), perm, sign, scale) && exact;
    rot[role] = {perm, sign};
  }
  RC_PRE(exact);  // scaling can make f16/bf16 subnormals inexact: such draws are discarded
  RC_CLASSIFY(scale != 1.0, "scaled");
  const Outputs oc = compute(backend, c), os = compute(backend, s);
  const Bounds bc = bounds_of(c, reference_of(c)), bs = bounds_of(s, reference_of(s));
  assert_empty(compare_within(os.loss, oc.loss, add_bounds(bc.loss, bs.loss), "loss"), c);
  for (const auto& role : c.wants_grad) {  // rotation only: G' = G R
    Tensor g = oc.grads.at(role);
    std::vector<double> b = bc.grads.at(role);
    auto it = rot.find(role);
    if (it != rot.end()) {
      transform(g, it->second.first, it->second.second, 1.0);
      b = permute_axis(b, g.shape(), 2, it->second.first);
    }
    assert_empty(compare_within(os.grads.at(role), g, add_bounds(b, bs.grads.at(role)), "grad " + role), c);
  }
}

}  // namespace divcheck::props

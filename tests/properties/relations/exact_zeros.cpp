// Property (b): exact zeros on identical inputs. For every row with zero_on_identical, the
// families that make the two sides bitwise identical (identical_rows, identical_hidden,
// exact_ties) must give a loss of exactly +-0 and gradients of exactly +-0 (per tied row for
// tvd_prob: the bug report's "gradient at p == q"), on the CPU backend and in the reference.
#include <cmath>

#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {

namespace {

std::string all_zero(const Tensor& t, const std::string& what) {
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (t.get(i) != 0.0) return what + "[" + std::to_string(i) + "] = " + std::to_string(t.get(i)) + ", not exactly 0";
  return {};
}

std::string ref_all_zero(const ExpectedTensor& t, const std::string& what) {
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (t.value[static_cast<std::size_t>(i)] != 0.0) return "reference " + what + "[" + std::to_string(i) + "] is not 0";
  return {};
}

// tvd_prob: rows where q == p bitwise (and not ignored) must have an exactly zero gradient
// row (and, for reduction "none", exactly zero loss elements); the loss is exactly 0 when every
// valid row ties.
std::string tvd_tied_rows(const Case& c, const Outputs& o) {
  const Tensor& p = c.inputs.at("p");
  const Tensor& q = c.inputs.at("q");
  const Tensor* labels = c.input("labels");
  const std::int64_t N = p.dim(0), V = p.dim(1);
  bool all_tied = true;
  for (std::int64_t r = 0; r < N; ++r) {
    if (labels && labels->get(r) == -100) continue;
    bool tied = true;
    for (std::int64_t v = 0; v < V; ++v) tied = tied && p.get(r * V + v) == q.get(r * V + v);
    all_tied = all_tied && tied;
    if (!tied) continue;
    for (std::int64_t v = 0; v < V; ++v) {
      if (c.wants("p") && o.grads.at("p").get(r * V + v) != 0.0)
        return "grad p at tied row " + std::to_string(r) + " column " + std::to_string(v) + " is " +
               std::to_string(o.grads.at("p").get(r * V + v)) + ", not exactly 0";
      if (c.params.reduction == "none" && o.loss.get(r * V + v) != 0.0)
        return "loss element at tied row " + std::to_string(r) + " is not exactly 0";
    }
  }
  if (all_tied && c.params.reduction != "none" && o.loss.get(0) != 0.0) return "loss of all-tied rows is not exactly 0";
  return {};
}

}  // namespace

bool identical_family(DivergenceId id, std::string_view f) {
  if (id == DivergenceId::fused_linear_masked_kl_divergence) return f == "identical_hidden";
  if (id == DivergenceId::tvd_prob) return f == "exact_ties";
  return f == "identical_rows";
}

void exact_zeros_property(const Backend& backend, DivergenceId id, const std::string& family) {
  const Case c = *gen_case(id, family);
  tag_case(c);
  const Outputs o = compute(backend, c);
  if (id == DivergenceId::tvd_prob) {
    assert_empty(tvd_tied_rows(c, o), c);
    return;
  }
  assert_empty(all_zero(o.loss, "loss"), c);
  for (const auto& [role, g] : o.grads) assert_empty(all_zero(g, "grad " + role), c);
  const Expected e = reference_of(c);  // the reference must say so too
  assert_empty(ref_all_zero(e.loss, "loss"), c);
  for (const auto& [role, g] : e.grads) assert_empty(ref_all_zero(g, "grad " + role), c);
}

}  // namespace divcheck::props

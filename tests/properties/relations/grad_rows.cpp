// Metamorphic: every logit-gradient row sums to 0 (softmax is invariant to adding a constant to
// a row, so the derivative along (1, ..., 1) vanishes), with or without a support mask. A row is
// checked where the reference row is finite: |sum_v y_v| <= sum_v bound_v, plus this check's own
// double-precision summation error.
#include <cmath>

#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {

void grad_rows_property(const Backend& backend, DivergenceId id) {
  const Case c = *gen_case_of(id, [](std::string_view) { return true; });
  tag_case(c);
  const Outputs o = compute(backend, c);
  const Expected e = reference_of(c);
  const Bounds b = bounds_of(c, e);
  for (const auto& role : c.wants_grad) {
    const Tensor& g = o.grads.at(role);
    const ExpectedTensor& r = e.grads.at(role);
    const std::int64_t V = g.dim(2), rows = g.numel() / V;
    for (std::int64_t row = 0; row < rows; ++row) {
      double sum = 0.0, abs_sum = 0.0, slack = 0.0, ref_abs = 0.0;
      bool finite = true;
      for (std::int64_t v = 0; v < V; ++v) {
        const std::size_t i = static_cast<std::size_t>(row * V + v);
        finite = finite && std::isfinite(r.value[i]);
        sum += g.get(row * V + v);
        abs_sum += std::fabs(g.get(row * V + v));
        slack += b.grads.at(role)[i];
        ref_abs += std::fabs(r.value[i]);
      }
      if (!finite) continue;
      // The reference values are the exact ones rounded to double (relative 2^-52 each).
      slack += 0x1p-50 * static_cast<double>(V) * abs_sum + 0x1p-51 * ref_abs;
      if (!(std::fabs(sum) <= slack))
        RC_FAIL("grad " + role + " row " + std::to_string(row) + " sums to " + std::to_string(sum) + " (allowed " +
                std::to_string(slack) + ")\n" + describe_case(c));
    }
  }
}

}  // namespace divcheck::props

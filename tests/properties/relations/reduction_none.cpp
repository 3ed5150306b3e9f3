// Metamorphic: reduction "none" averages to "mean". For rows with both reductions, the mean of
// the (B,) "none" output equals the "mean" loss within the sum of their bounds; and the gradient
// of "mean" with upstream g equals the gradient of "none" with upstream g/B (checked when g/B
// is exact in float32).
#include <cmath>

#include "relations/relations.hpp"
#include "support/property_support.hpp"
#include "support/tensor_ops.hpp"

namespace divcheck::props {

void reduction_none_property(const Backend& backend, DivergenceId id) {
  const Case base = *gen_case_of(id, [](std::string_view) { return true; });
  tag_case(base);
  Case mean = base, none = base;
  mean.params.reduction = "mean";
  none.params.reduction = "none";
  const std::int64_t B = base.inputs.at(std::string(info(id).roles.front().name)).dim(0);
  const double g = static_cast<double>(static_cast<float>(base.grad_output.get(0)));
  mean.grad_output = Tensor::scalar_f32(static_cast<float>(g));
  none.grad_output = Tensor(DType::f32, {B});
  const bool exact = static_cast<double>(static_cast<float>(g / static_cast<double>(B))) == g / static_cast<double>(B);
  for (std::int64_t b = 0; b < B; ++b) none.grad_output.set(b, g / static_cast<double>(B));
  if (!exact) {
    mean.wants_grad.clear();
    none.wants_grad.clear();
  }
  RC_CLASSIFY(exact && !mean.wants_grad.empty(), "gradients compared");
  const Outputs om = compute(backend, mean), on = compute(backend, none);
  const Bounds bm = bounds_of(mean, reference_of(mean)), bn = bounds_of(none, reference_of(none));

  double avg = 0.0, avg_bound = 0.0, abs_sum = 0.0;
  for (std::int64_t b = 0; b < B; ++b) {
    avg += on.loss.get(b) / static_cast<double>(B);
    avg_bound += bn.loss[static_cast<std::size_t>(b)] / static_cast<double>(B);
    abs_sum += std::fabs(on.loss.get(b));
  }
  const double y = om.loss.get(0);
  if (std::isnan(avg) || std::isinf(avg)) {
    if (!(std::isnan(avg) ? std::isnan(y) : y == avg)) RC_FAIL("mean " + std::to_string(y) + " vs mean of none " + std::to_string(avg) + "\n" + describe_case(base));
  } else {
    const double allowed = bm.loss[0] + avg_bound + 0x1p-50 * abs_sum;
    if (!(std::fabs(y - avg) <= allowed))
      RC_FAIL("mean " + std::to_string(y) + " vs mean of none " + std::to_string(avg) + " (allowed " + std::to_string(allowed) + ")\n" + describe_case(base));
  }
  for (const auto& role : mean.wants_grad)
    assert_empty(compare_within(on.grads.at(role), om.grads.at(role), add_bounds(bm.grads.at(role), bn.grads.at(role)), "grad " + role), base);
}

}  // namespace divcheck::props

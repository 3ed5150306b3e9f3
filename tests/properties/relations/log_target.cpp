// Metamorphic: the two log_target paths compute the same function. For masked_kl and
// masked_jefferys, the case with log_target = True and with False agree (loss and gradients)
// within the sum of their bounds; zero-probability columns included.
#include "relations/relations.hpp"
#include "support/property_support.hpp"
#include "support/tensor_ops.hpp"

namespace divcheck::props {

void log_target_property(const Backend& backend, DivergenceId id) {
  Case t = *gen_case_of(id, [](std::string_view) { return true; });
  tag_case(t);
  t.params.log_target = true;
  Case f = t;
  f.params.log_target = false;
  const Outputs ot = compute(backend, t), of = compute(backend, f);
  const Bounds bt = bounds_of(t, reference_of(t)), bf = bounds_of(f, reference_of(f));
  assert_empty(compare_within(ot.loss, of.loss, add_bounds(bt.loss, bf.loss), "loss"), t);
  for (const auto& role : t.wants_grad)
    assert_empty(compare_within(ot.grads.at(role), of.grads.at(role), add_bounds(bt.grads.at(role), bf.grads.at(role)), "grad " + role), t);
}

}  // namespace divcheck::props

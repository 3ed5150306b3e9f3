// Property (c): NaN and inf agreement on the families built to produce them. NaN rows at valid
// positions must make the result NaN (docs/semantics.md rule 1) where the reference says so;
// padded vocabularies give +inf (never NaN) for KL-type rows with q = 0 < p; garbage at masked
// positions never leaks. judge() decides NaN/inf agreement element by element; this property
// fails on any nan_mismatch, inf_mismatch, missing or misshapen output, and checks that the family really
// produced what it is for. (Exact zeros and bounds are the agreement property's business.)
#include <cmath>

#include "properties/mismatch_names.hpp"
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {

namespace {

bool any_nan(const Tensor& t) {
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (std::isnan(t.get(i))) return true;
  return false;
}

}  // namespace

bool nonfinite_family(std::string_view f) {
  return is_nan_family(f) || f == "padded_vocab" || f == "masked_garbage" || f == "extreme_logits";
}

void nonfinite_property(const Backend& backend, DivergenceId id, const std::string& family) {
  const Case c = *gen_case(id, family);
  tag_case(c);
  const Expected e = reference_of(c);
  const Outputs o = compute(backend, c);
  const Verdict v = judge(c, o, e);
  for (const auto& t : v.tensors)
    for (const auto& m : t.first)
      if (m.kind == MismatchKind::nan_mismatch || m.kind == MismatchKind::inf_mismatch || m.kind == MismatchKind::missing ||
          m.kind == MismatchKind::shape)
        RC_FAIL(std::string(mismatch_kind_name(m.kind)) + " in " + t.name + ": " + v.summary() + "\n" + describe_case(c));
  if (is_nan_family(family)) {
    // The family put NaN/inf into a valid position: the reference and the backend must show it.
    // Logit rows and fused-linear: NaN, +inf or an all -inf side at a valid position is a NaN
    // row (rule 1). dcor: NaN once at least 4 samples are valid (else the result is 0).
    // tvd_prob: an infinite element may give +inf instead, so judge() alone decides there.
    bool must_be_nan = id != DivergenceId::tvd_prob && id != DivergenceId::masked_unbiased_dcor;
    if (id == DivergenceId::masked_unbiased_dcor) {
      const Tensor& m = c.inputs.at("attention_mask");
      std::int64_t n = 0;
      for (std::int64_t i = 0; i < m.numel(); ++i) n += m.nonzero(i);
      must_be_nan = n >= 4;
    }
    if (must_be_nan && !any_nan(o.loss)) RC_FAIL("a NaN row at a valid position did not make the loss NaN\n" + describe_case(c));
    RC_CLASSIFY(any_nan(o.loss), "loss NaN");
  } else {
    // Padding, garbage at masked positions and extreme values never make the loss NaN.
    if (any_nan(o.loss)) RC_FAIL("loss is NaN\n" + describe_case(c));
    RC_CLASSIFY(std::isinf(o.loss.get(0)), "loss inf");
  }
}

}  // namespace divcheck::props

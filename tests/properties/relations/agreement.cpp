// Property (a): for every family of every registry row, the CPU backend agrees with the
// float128 reference under judge() (tolerance bound, exact zeros, NaN/inf agreement). Each
// (row, family) pair is its own test; RC_TAG lists the dtype and size buckets generated.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {

void agreement_property(const Backend& backend, DivergenceId id, const std::string& family) {
  const Case c = *gen_case(id, family);
  tag_case(c);
  const Expected e = reference_of(c);
  const Outputs o = compute(backend, c);
  const Verdict v = judge(c, o, e);
  if (!v.pass) RC_FAIL(v.summary() + "\n" + describe_case(c));
}

}  // namespace divcheck::props

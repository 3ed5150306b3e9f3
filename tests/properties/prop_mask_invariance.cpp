// Metamorphic mask invariance: masked values are inert, bitwise. Body: relations/mask_invariance.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class MaskInvariance : public ::testing::TestWithParam<DivergenceId> {};

TEST_P(MaskInvariance, MaskedValuesAreInert) {
  const DivergenceId id = GetParam();
  check_property([id] { mask_invariance_property(cpu(), id); });
}

INSTANTIATE_TEST_SUITE_P(MaskInvariantRows, MaskInvariance,
                         ::testing::ValuesIn(rows_where([](const DivergenceInfo& d) { return d.props.mask_invariant; })),
                         row_test_name);

}  // namespace
}  // namespace divcheck::props

// Metamorphic shift invariance (logit rows, dcor translation). Body: relations/shift.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class ShiftInvariance : public ::testing::TestWithParam<DivergenceId> {};

TEST_P(ShiftInvariance, ExactShiftsChangeNothing) {
  const DivergenceId id = GetParam();
  check_property([id] { shift_property(cpu(), id); });
}

INSTANTIATE_TEST_SUITE_P(ShiftInvariantRows, ShiftInvariance,
                         ::testing::ValuesIn(rows_where([](const DivergenceInfo& d) { return d.props.shift_invariant; })),
                         row_test_name);

}  // namespace
}  // namespace divcheck::props

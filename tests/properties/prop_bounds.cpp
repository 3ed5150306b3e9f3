// Declared bounds: non-negativity and TV <= 1, JS <= ln 2, H^2 <= 1, dcor in [0, 1].
// Body: relations/bounds.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class Bounded : public ::testing::TestWithParam<DivergenceId> {};

TEST_P(Bounded, NonNegativeAndBelowTheUpperBound) {
  const DivergenceId id = GetParam();
  check_property([id] { bounds_property(cpu(), id); });
}

INSTANTIATE_TEST_SUITE_P(DeclaredBounds, Bounded,
                         ::testing::ValuesIn(rows_where([](const DivergenceInfo& d) { return d.props.nonnegative || d.props.upper_bound; })),
                         row_test_name);

}  // namespace
}  // namespace divcheck::props

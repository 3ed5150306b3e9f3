// Metamorphic symmetry of the symmetric rows. Body: relations/symmetry.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class Symmetry : public ::testing::TestWithParam<DivergenceId> {};

TEST_P(Symmetry, SwappingTheSidesSwapsNothingButTheGradients) {
  const DivergenceId id = GetParam();
  check_property([id] { symmetry_property(cpu(), id); });
}

INSTANTIATE_TEST_SUITE_P(SymmetricRows, Symmetry,
                         ::testing::ValuesIn(rows_where([](const DivergenceInfo& d) { return d.props.symmetric; })),
                         row_test_name);

}  // namespace
}  // namespace divcheck::props

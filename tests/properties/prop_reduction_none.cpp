// Metamorphic: reduction "none" averages to "mean". Body: relations/reduction_none.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class ReductionNone : public ::testing::TestWithParam<DivergenceId> {};

TEST_P(ReductionNone, NoneAveragesToMean) {
  const DivergenceId id = GetParam();
  check_property([id] { reduction_none_property(cpu(), id); });
}

INSTANTIATE_TEST_SUITE_P(RowsWithNone, ReductionNone,
                         ::testing::ValuesIn(rows_where([](const DivergenceInfo& d) { return d.props.has_reduction_none; })),
                         row_test_name);

}  // namespace
}  // namespace divcheck::props

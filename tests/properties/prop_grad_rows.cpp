// Metamorphic: every logit-gradient row sums to 0. Body: relations/grad_rows.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class GradRows : public ::testing::TestWithParam<DivergenceId> {};

TEST_P(GradRows, EveryLogitGradientRowSumsToZero) {
  const DivergenceId id = GetParam();
  check_property([id] { grad_rows_property(cpu(), id); });
}

INSTANTIATE_TEST_SUITE_P(LogitRows, GradRows,
                         ::testing::ValuesIn(rows_where([](const DivergenceInfo& d) { return d.props.grad_rows_sum_zero; })),
                         row_test_name);

}  // namespace
}  // namespace divcheck::props

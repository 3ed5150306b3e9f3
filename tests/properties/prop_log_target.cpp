// Metamorphic: the two log_target paths agree. Body: relations/log_target.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class LogTarget : public ::testing::TestWithParam<DivergenceId> {};

TEST_P(LogTarget, BothPathsAgree) {
  const DivergenceId id = GetParam();
  check_property([id] { log_target_property(cpu(), id); });
}

INSTANTIATE_TEST_SUITE_P(RowsWithLogTarget, LogTarget,
                         ::testing::ValuesIn(rows_where([](const DivergenceInfo& d) { return d.props.has_log_target; })),
                         row_test_name);

}  // namespace
}  // namespace divcheck::props

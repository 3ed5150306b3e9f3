// Property (c): NaN and inf where and only where the reference has them, on the families that
// produce them. Body: relations/nonfinite.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class NonFinite : public ::testing::TestWithParam<RowFamily> {};

TEST_P(NonFinite, NanAndInfWhereAndOnlyWhereTheReferenceHasThem) {
  const RowFamily rf = GetParam();
  check_property([rf] { nonfinite_property(cpu(), rf.id, rf.family); });
}

INSTANTIATE_TEST_SUITE_P(NonFiniteFamilies, NonFinite,
                         ::testing::ValuesIn(row_families([](const DivergenceInfo&) { return true; }, nonfinite_family)),
                         row_family_test_name);

}  // namespace
}  // namespace divcheck::props

// Property (a): the CPU backend agrees with the float128 reference under judge(), one test per
// (row, family); RC_TAG lists the dtypes and vocabulary sizes generated. Body: relations/agreement.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class Agreement : public ::testing::TestWithParam<RowFamily> {};

TEST_P(Agreement, CpuBackendWithinBoundOfReference) {
  const RowFamily rf = GetParam();
  check_property([rf] { agreement_property(cpu(), rf.id, rf.family); });
}

INSTANTIATE_TEST_SUITE_P(AllRows, Agreement,
                         ::testing::ValuesIn(row_families([](const DivergenceInfo&) { return true; },
                                                          [](std::string_view) { return true; })),
                         row_family_test_name);

}  // namespace
}  // namespace divcheck::props

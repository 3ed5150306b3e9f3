// Property (b): identical inputs give exactly zero loss and gradients (tvd_prob: tied rows).
// Body: relations/exact_zeros.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class ExactZeros : public ::testing::TestWithParam<RowFamily> {};

TEST_P(ExactZeros, IdenticalInputsGiveExactlyZero) {
  const RowFamily rf = GetParam();
  check_property([rf] { exact_zeros_property(cpu(), rf.id, rf.family); });
}

INSTANTIATE_TEST_SUITE_P(ZeroOnIdenticalRows, ExactZeros,
                         ::testing::ValuesIn([] {
                           std::vector<RowFamily> out;
                           for (const auto& d : registry())
                             if (d.props.zero_on_identical)
                               for (const auto& f : families(d.id))
                                 if (identical_family(d.id, f.name)) out.push_back({d.id, std::string(f.name)});
                           return out;
                         }()),
                         row_family_test_name);

}  // namespace
}  // namespace divcheck::props

// Metamorphic vocabulary permutation. Body: relations/permutation.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class Permutation : public ::testing::TestWithParam<DivergenceId> {};

TEST_P(Permutation, PermutingTheVocabularyPermutesTheGradients) {
  const DivergenceId id = GetParam();
  check_property([id] { permutation_property(cpu(), id); });
}

INSTANTIATE_TEST_SUITE_P(PermutationInvariantRows, Permutation,
                         ::testing::ValuesIn(rows_where([](const DivergenceInfo& d) { return d.props.permutation_invariant; })),
                         row_test_name);

}  // namespace
}  // namespace divcheck::props

// Metamorphic: fused-linear KL equals project-then-divergence. Body: relations/fused_projection.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class FusedProjection : public ::testing::Test {};

TEST_F(FusedProjection, FusedEqualsProjectThenDivergence) {
  check_property([] { fused_projection_property(cpu()); });
}

}  // namespace
}  // namespace divcheck::props

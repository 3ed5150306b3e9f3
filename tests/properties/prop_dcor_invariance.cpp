// Metamorphic: dcor is invariant to rotation and scale. Body: relations/dcor_invariance.cpp.
#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class DcorInvariance : public ::testing::Test {};

TEST_F(DcorInvariance, RotationAndScale) {
  check_property([] { dcor_invariance_property(cpu()); });
}

}  // namespace
}  // namespace divcheck::props

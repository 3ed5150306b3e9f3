// masked_unbiased_dcor on the CPU: distance matrices of the valid samples, U-centring, the
// clamped ratio of SPEC.md, and its gradient to both sample tensors.
#pragma once

#include "core/case.hpp"

namespace divcheck::cpu {

Outputs run_dcor(const Case& c);

}  // namespace divcheck::cpu

// The nine logit-level rows of the registry on the CPU: the per-position driver (masks,
// NaN rows, weights, gradients written once) around a row kernel of row_kernels.hpp.
#pragma once

#include "core/case.hpp"
#include "kernels/cpu/row_kernels.hpp"

namespace divcheck::cpu {

// Runs a validated case of a logit-level row with the given row kernel.
Outputs run_logit_divergence(const Case& c, RowKernel kernel);

}  // namespace divcheck::cpu

// Human-readable description of a Case (divergence, family, seed, parameters, wanted
// gradients, every tensor with its dtype, shape and values; long tensors abbreviated). Also the
// showValue hook RapidCheck uses to print counterexamples.
#pragma once

#include <ostream>
#include <string>

#include "core/case.hpp"

namespace divcheck {

// max_values: tensors with more elements show the first max_values and a count.
std::string describe_case(const Case& c, std::int64_t max_values = 512);

// Found by RapidCheck through argument-dependent lookup when it prints a counterexample.
void showValue(const Case& c, std::ostream& os);

}  // namespace divcheck

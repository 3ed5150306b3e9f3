// The summation-depth part of the tolerance model: for one case, the sigma that enters the
// bound (c + sigma) * u * scale of the loss and of each gradient (docs/tolerances.md, "sigma").
// Internal to divcheck_properties; judge() uses it.
#pragma once

#include <map>
#include <string>

#include "core/case.hpp"

namespace divcheck {

struct CaseSigmas {
  double loss = 0.0;
  std::map<std::string, double> grads;  // one per differentiable role of the row
};

// sigma of every output of a (validated) case; see the comment in tolerance_model.cpp for the
// choice per row kind.
CaseSigmas case_sigmas(const Case& c);

}  // namespace divcheck

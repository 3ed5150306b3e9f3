// tvd_prob on the CPU: total variation on probability rows as in LigerTVDLoss (SPEC.md), with
// the three-way subgradient (exactly 0 at ties) that the public kernel gets wrong.
#pragma once

#include "core/case.hpp"

namespace divcheck::cpu {

Outputs run_tvd_prob(const Case& c);

}  // namespace divcheck::cpu

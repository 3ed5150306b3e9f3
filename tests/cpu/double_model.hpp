// An independent double-precision model of the 12 losses, written straight from SPEC.md's
// formulas (no simplified gradient forms, no shared code with kernels/). Tests use it for the
// loss values and, by central finite differences, to check every gradient the CPU backend
// returns. Meant for small finite cases (it does not implement the non-finite rules).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace divcheck::testing {

// Values of the floating roles as doubles (exact copies of the case's tensors).
using RoleValues = std::map<std::string, std::vector<double>>;
RoleValues role_values(const Case& c);

// The loss tensor's values (1, B, or N*V entries) for the case with `values` in place of its
// floating inputs. `scale` (optional) receives, per loss element, the magnitude a float32
// evaluation's error is proportional to: the reduced sum over columns of
// (p + q)(|lp| + |lq| + 1) (plus the projection magnitudes for fused-linear), 1 for dcor, the
// value itself for tvd_prob.
std::vector<double> model_loss(const Case& c, const RoleValues& values, std::vector<double>* scale = nullptr);

// sum_i grad_output_i * loss_i: the scalar whose gradient a backend returns.
double model_objective(const Case& c, const RoleValues& values);

// Central finite-difference gradient of model_objective with respect to every element of role
// (for the fused-linear row the teacher branch's lm_head_weight is held fixed: it is detached).
std::vector<double> model_fd_gradient(const Case& c, const std::string& role);

}  // namespace divcheck::testing

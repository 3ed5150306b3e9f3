// Internal interface of the reference (includes Boost; only .cpp files include it).
//
// `evaluate_real<R>` computes a case's loss and wanted gradients in the real type R, before the
// final rounding, together with each element's condition scale and discontinuity allowance.
// compute_reference() (reference.cpp) is evaluate_real followed by round_to_odd. The tests use
// evaluate_real directly: with `RealInputs::overrides` an input can be given R-valued (not
// representable in its dtype), which is how the gradients are checked against central finite
// differences at 50 digits.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "reference/real_types.hpp"

namespace divcheck::ref {

// Read access to one input role: the tensor's exact values, or an R-valued override.
template <class R>
struct RoleView {
  const Tensor* tensor = nullptr;
  const std::vector<R>* override_values = nullptr;
  bool present() const { return tensor != nullptr; }
  R at(std::int64_t i) const { return override_values ? (*override_values)[i] : R(tensor->get(i)); }
  double at_double(std::int64_t i) const {  // for error analysis only
    return override_values ? to_double((*override_values)[i]) : tensor->get(i);
  }
};

template <class R>
struct RealInputs {
  const Case* c = nullptr;
  // role name -> R values (numel of the role's tensor). Only floating roles may be overridden.
  // fused_linear: an override of lm_head_weight applies to the student projection only (the
  // teacher side is detached, so the derivative of that function is the reference gradient).
  std::map<std::string, std::vector<R>> overrides;

  explicit RealInputs(const Case& cs) : c(&cs) {}
  RoleView<R> view(const std::string& role) const {
    RoleView<R> v;
    v.tensor = c->input(role);
    auto it = overrides.find(role);
    if (v.tensor && it != overrides.end()) v.override_values = &it->second;
    return v;
  }
  RoleView<R> exact_view(const std::string& role) const {  // ignores overrides
    RoleView<R> v;
    v.tensor = c->input(role);
    return v;
  }
};

// One output before rounding. value: R (exact to R's precision); scale, jump: see
// ExpectedTensor in reference/reference.hpp.
// ambiguous_zero: 1 where the value is 0 but float32 may legitimately return a non-zero (a
// clamp that float32 cannot resolve); such zeros are not flagged exact_zero.
template <class R>
struct RealTensor {
  std::vector<R> value;
  std::vector<double> scale;
  std::vector<double> jump;
  std::vector<std::uint8_t> ambiguous_zero;
  void resize(std::int64_t n) {
    value.assign(static_cast<std::size_t>(n), R(0));
    scale.assign(static_cast<std::size_t>(n), 0.0);
    jump.assign(static_cast<std::size_t>(n), 0.0);
    ambiguous_zero.assign(static_cast<std::size_t>(n), 0);
  }
};

template <class R>
struct RealResult {
  RealTensor<R> loss;
  std::map<std::string, RealTensor<R>> grads;  // one per wanted role
};

// Row implementations (one per file). The case must have passed validate_case.
template <class R>
RealResult<R> logit_divergence_real(const RealInputs<R>& in);  // the nine logit-level rows
template <class R>
RealResult<R> fused_linear_real(const RealInputs<R>& in);
template <class R>
RealResult<R> dcor_real(const RealInputs<R>& in);
template <class R>
RealResult<R> tvd_prob_real(const RealInputs<R>& in);

// Dispatch on the case's divergence id (reference.cpp).
template <class R>
RealResult<R> evaluate_real(const RealInputs<R>& in);

// Shared helpers (reference.cpp).
// The reduction in effect: the case's parameter, or the row's default when it has none.
std::string effective_reduction(const Case& c);
// sigma(n) = ceil(n / 1024) + 16: the summation depth of docs/semantics.md (the verdict's
// definition; repeated here because the reference needs it for discontinuity allowances).
double summation_depth_of(std::int64_t n);
// Unit roundoff of the float32 arithmetic every implementation uses.
inline constexpr double kU32 = 1.0 / 16777216.0;  // 2^-24

#define DIVCHECK_REF_EXTERN(fn)                                  \
  extern template RealResult<Float128> fn(const RealInputs<Float128>&); \
  extern template RealResult<Mpfr50> fn(const RealInputs<Mpfr50>&);
DIVCHECK_REF_EXTERN(logit_divergence_real)
DIVCHECK_REF_EXTERN(fused_linear_real)
DIVCHECK_REF_EXTERN(dcor_real)
DIVCHECK_REF_EXTERN(tvd_prob_real)
DIVCHECK_REF_EXTERN(evaluate_real)
#undef DIVCHECK_REF_EXTERN

}  // namespace divcheck::ref

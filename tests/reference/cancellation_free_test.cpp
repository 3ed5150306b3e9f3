// The reference's gradient values are free of the 1 - sum cancellation (reference/centering.hpp):
// on rows built to provoke it (near-one-hot rows, mass where the other side has almost none,
// support masks, temperatures) the float128 instance agrees with the MPFR-50 instance to 1e-28
// RELATIVE on every element, however small. The forms as docs/semantics.md writes them would
// leave float128 residues of ~1e-34 |term| on values of 1e-40 and fail by orders of magnitude
// (both instances run the same code, so this measures float128's own accuracy: MPFR-50 carries
// 2^-166, ~1e-50, far below the tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "reference/real_engine.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck {
namespace {

using ref::Float128;
using ref::Mpfr50;
using testing_ref::kInf;
using testing_ref::logit_case;
using testing_ref::tensor_of;

void compare_relative(const ref::RealTensor<Float128>& a, const ref::RealTensor<Mpfr50>& b, const std::string& what) {
  ASSERT_EQ(a.value.size(), b.value.size()) << what;
  for (std::size_t i = 0; i < a.value.size(); ++i) {
    const Mpfr50 x = ref::widen_exact(a.value[i]);
    const Mpfr50& y = b.value[i];
    if (ref::is_nan(y) || ref::is_inf(y)) {
      EXPECT_TRUE(ref::is_nan(y) ? ref::is_nan(x) : x == y) << what << "[" << i << "]";
      continue;
    }
    EXPECT_EQ(x == 0, y == 0) << what << "[" << i << "]: mpfr " << static_cast<double>(y) << ", f128 "
                              << static_cast<double>(x);
    EXPECT_TRUE(abs(x - y) <= Mpfr50(1e-28) * abs(y))
        << what << "[" << i << "]: mpfr " << static_cast<double>(y) << ", relative error "
        << static_cast<double>(abs(x - y) / abs(y));
  }
}

void check_relative(const Case& c) {
  validate_case(c);
  const auto a = ref::evaluate_real<Float128>(ref::RealInputs<Float128>(c));
  const auto b = ref::evaluate_real<Mpfr50>(ref::RealInputs<Mpfr50>(c));
  const std::string name(name_of(c.id));
  compare_relative(a.loss, b.loss, name + ": loss");
  for (const auto& [role, g] : a.grads) compare_relative(g, b.grads.at(role), name + ": " + role);
}

// Three positions of V = 5 (p side, q side):
//   near-one-hot on the same column with tails far apart;
//   mass of p where q has ~none and the reverse (disjoint supports, e ~ ln 2, h/p ~ 1/2);
//   one column dominant on each side, different columns, a -inf column on both sides.
const std::vector<double> kP = {0, -90, -95, -120, -200,  -100, -95, 0, -110, 1,  0, -80, -85, -kInf, -60};
const std::vector<double> kQ = {0, 3, -50, -80, -150,     0, 2, -100, -3, -105,  -70, 0, -95, -kInf, -90};

TEST(ReferenceCancellationFree, LogitRowsAgreeWithMpfrToRelativePrecision) {
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::masked_jefferys_divergence,
                          DivergenceId::masked_cross_entropy, DivergenceId::jefferys_divergence,
                          DivergenceId::jensen_shannon_divergence, DivergenceId::squared_hellinger_distance,
                          DivergenceId::total_variation, DivergenceId::temperature_scaled_masked_kl_divergence,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence}) {
    SCOPED_TRACE(std::string(name_of(id)));
    Case c = logit_case(id, 1, 3, 5, kP, kQ);
    check_relative(c);
    if (c.params.reduction == "mean") {  // the support rows: a support mask without column 1 or 4
      c.inputs["support_mask"] = tensor_of(DType::u8, {1, 3, 5}, {1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1});
      check_relative(c);
    }
    if (id == DivergenceId::temperature_scaled_masked_kl_divergence ||
        id == DivergenceId::temperature_scaled_masked_jefferys_divergence) {
      for (double t : {0.5, 3.0}) {
        c.params.temperature = t;
        check_relative(c);
      }
    }
  }
}

}  // namespace
}  // namespace divcheck

// The reference gradients of every row against central finite differences of the reference
// loss, all in MPFR at 50 digits. Each differentiable input element is perturbed by
// h = 1e-20 * max(|x|, 1) without rounding the perturbed value to its dtype (R-valued inputs
// through RealInputs::overrides), so the difference quotient is accurate to ~1e-30 relative
// (truncation h^2 f''' ~ 1e-40, cancellation 1e-50 / 1e-20). The objective is sum_k g_k L_k with
// the case's upstream gradient g (scalar, (B,) for "none", (N, V) for tvd_prob "none").
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "reference/real_engine.hpp"
#include "tests/cpu/test_cases.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck {
namespace {

using ref::Mpfr50;
using testing_ref::RandomOptions;
using testing_ref::random_case;
using testing_ref::set_reduction;

Mpfr50 objective(const Case& c, const ref::RealInputs<Mpfr50>& in) {
  ref::RealResult<Mpfr50> r = ref::evaluate_real<Mpfr50>(in);
  Mpfr50 s = 0;
  for (std::size_t k = 0; k < r.loss.value.size(); ++k)
    s += Mpfr50(c.grad_output.get(static_cast<std::int64_t>(k))) * r.loss.value[k];
  return s;
}

// Checks every wanted gradient of `c`; returns the number of elements compared.
int check_gradients(const Case& c, double rel_tol = 1e-24) {
  validate_case(c);
  ref::RealInputs<Mpfr50> base(c);
  const ref::RealResult<Mpfr50> analytic = ref::evaluate_real<Mpfr50>(base);
  int compared = 0;
  for (const std::string& role : c.wants_grad) {
    const Tensor& t = *c.input(role);
    const std::vector<Mpfr50>& an = analytic.grads.at(role).value;
    Mpfr50 max_abs = 0;
    for (const auto& v : an)
      if (!ref::is_nan(v)) max_abs = std::max(max_abs, Mpfr50(abs(v)));
    EXPECT_GT(max_abs, 0) << role << ": all gradients zero, the comparison would be vacuous";
    std::vector<Mpfr50> values(static_cast<std::size_t>(t.numel()));
    for (std::int64_t i = 0; i < t.numel(); ++i) values[i] = Mpfr50(t.get(i));
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      if (ref::is_nan(values[i])) {  // masked garbage: the gradient must be exactly 0
        EXPECT_TRUE(an[i] == 0) << role << "[" << i << "] at a masked position";
        continue;
      }
      const Mpfr50 x = values[i];
      const Mpfr50 h = Mpfr50(1e-20) * std::max(Mpfr50(abs(x)), Mpfr50(1));
      ref::RealInputs<Mpfr50> in(c);
      values[i] = x + h;
      in.overrides[role] = values;
      const Mpfr50 fp = objective(c, in);
      values[i] = x - h;
      in.overrides[role] = values;
      const Mpfr50 fm = objective(c, in);
      values[i] = x;
      const Mpfr50 fd = (fp - fm) / (2 * h);
      const Mpfr50 err = abs(fd - an[i]);
      EXPECT_LE(err, rel_tol * (abs(an[i]) + max_abs))
          << name_of(c.id) << " " << role << "[" << i << "]: analytic " << an[i].str(25) << " finite difference "
          << fd.str(25);
      ++compared;
    }
  }
  return compared;
}

// The rows the logit-row tests here and in scale_soundness_test.cpp loop over come from the
// registry (divcheck::testing::logit_rows): the nine logit-level rows of SPEC.md, i.e. issue 3's ten
// rows without tvd_prob (probabilities), and neither the fused-linear row (hidden states and a
// weight) nor distance correlation.
TEST(ReferenceFiniteDifference, LogitRowsAreTheRegistrysLogitLevelRows) {
  const std::vector<DivergenceId> rows = divcheck::testing::logit_rows();
  EXPECT_EQ(rows.size(), 9u);
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::total_variation,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence})
    EXPECT_NE(std::find(rows.begin(), rows.end(), id), rows.end()) << name_of(id);
  for (DivergenceId id : {DivergenceId::tvd_prob, DivergenceId::fused_linear_masked_kl_divergence,
                          DivergenceId::masked_unbiased_dcor})
    EXPECT_EQ(std::find(rows.begin(), rows.end(), id), rows.end()) << name_of(id);
}

TEST(ReferenceFiniteDifference, LogitRowsDefaultReduction) {
  for (DivergenceId id : divcheck::testing::logit_rows()) {
    SCOPED_TRACE(std::string(name_of(id)));
    Case c = random_case(id, 11);
    if (id == DivergenceId::temperature_scaled_masked_kl_divergence) c.params.temperature = 0.7;
    if (id == DivergenceId::temperature_scaled_masked_jefferys_divergence) c.params.temperature = 2.5;
    EXPECT_EQ(check_gradients(c), 2 * 2 * 2 * 6);  // 2 roles x 4 valid positions x V = 6
  }
}

TEST(ReferenceFiniteDifference, SupportRowsReductionNoneAndFullSupport) {
  for (DivergenceId id : {DivergenceId::jefferys_divergence, DivergenceId::jensen_shannon_divergence,
                          DivergenceId::squared_hellinger_distance, DivergenceId::total_variation}) {
    SCOPED_TRACE(std::string(name_of(id)));
    Case c = random_case(id, 12);
    set_reduction(c, "none");
    check_gradients(c);
    RandomOptions o;
    o.support_mask = false;
    Case full = random_case(id, 13, o);
    check_gradients(full);
  }
}

TEST(ReferenceFiniteDifference, CappedCrossEntropy) {
  Case c = random_case(DivergenceId::masked_cross_entropy, 14);
  c.params.max_loss = 1.5;
  c.params.scaling_factor = 0.8;
  check_gradients(c);
}

TEST(ReferenceFiniteDifference, FusedLinearBothDirectionsAndReductions) {
  for (double beta : {0.0, 1.0}) {
    for (const char* red : {"sequence_mean", "token_mean"}) {
      for (double temp : {1.0, 1.3}) {
        SCOPED_TRACE(std::string("beta ") + std::to_string(beta) + " " + red + " T " + std::to_string(temp));
        RandomOptions o;
        o.V = 5;
        o.H = 3;
        Case c = random_case(DivergenceId::fused_linear_masked_kl_divergence, 15, o);
        c.params.jsd_beta = beta;
        c.params.temperature = temp;
        set_reduction(c, red);
        // B*T*H student elements + V*H weight elements (masked hidden rows hold NaN garbage).
        EXPECT_GT(check_gradients(c), 0);
      }
    }
  }
}

TEST(ReferenceFiniteDifference, Dcor) {
  RandomOptions o;
  o.T = 4;  // 6 valid samples
  Case c = random_case(DivergenceId::masked_unbiased_dcor, 16, o);
  validate_case(c);
  ref::RealInputs<Mpfr50> in(c);
  const auto r = ref::evaluate_real<Mpfr50>(in);
  ASSERT_GT(r.loss.value[0], 0);  // inside the clamp, so the gradient is the smooth one
  ASSERT_LT(r.loss.value[0], 1);
  check_gradients(c);
  c.params.safety_factor = 0.0;  // eps = 0 is allowed
  check_gradients(c);
}

TEST(ReferenceFiniteDifference, TvdProbEveryReduction) {
  for (const char* red : {"batchmean", "sum", "mean", "none"}) {
    SCOPED_TRACE(red);
    Case c = random_case(DivergenceId::tvd_prob, 17);
    set_reduction(c, red);
    check_gradients(c);
  }
}

}  // namespace
}  // namespace divcheck

// Products of two factors that are both rounding noise (docs/tolerances.md, "Products of two
// noisy factors"). The running-error scale is first order: |a|·e_b + |b|·e_a. Where a and b are
// themselves below their own errors (Hellinger's √p − √q squared, Jefferys' (p − q)·d on a
// column where p and q agree to far below float32's precision), that term vanishes and the
// error of an honest float32 evaluation is the second-order e_a·e_b. The nightly CPU gate of
// 2026-12-05 (seed 20261205, squared_hellinger_distance case 2654, partial_ties; shrunk into
// cases/squared_hellinger_distance-partial_ties-noise-squared.safetensors) found it: a bound of
// 3.5e-44 on a loss that float32 computes as 0 with the reference's 3.47e-44.
//
// The row here is that case's: column 0 holds all the mass of both sides (p0 = 1 − e^−265,
// q0 = 1 − e^−48.3), which float32 and even double round to 1, and the support mask keeps column
// 0 alone. A float32 evaluation whose q0 comes out one unit below 1 (an exponential within its
// 2-ulp error does that) gives Hellinger 2^−49 and Jefferys 2^−48 in place of ~1e−43: rounding
// noise the bound must admit. Noise far beyond the model (1e−6) must still fail.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>

#include "reference/reference.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck {
namespace {

using testing_ref::logit_case;
using testing_ref::tensor_of;

Case noisy_column_case(DivergenceId id) {
  Case c = logit_case(id, 1, 1, 2, {75.0, -190.174911}, {-141.873627, -190.174911});
  c.inputs["support_mask"] = tensor_of(DType::boolean, {1, 1, 2}, {1.0, 0.0});
  c.wants_grad.clear();  // the loss alone: its scale is what this is about
  return c;
}

// The scale-soundness test's bound (tests/reference/scale_soundness_test.cpp): c·u·scale + jump
// + 2^-149, without the verdict's summation term σ (a stricter test than the gate's).
double loss_bound(const Case& c, const Expected& e) {
  return info(c.id).tolerance.loss_c * std::ldexp(1.0, -24) * e.loss.scale.at(0) + e.loss.jump.at(0) +
         std::ldexp(1.0, -149);
}

// q0 one unit in the last place below 1 (the float below 1.0f), as an honest float32 kernel
// may compute it; p0 = 1.
constexpr float kQ0 = 1.0f - 0x1p-24f;

// The row's loss must be tiny and not a structural zero, and its bound must admit every one of
// `honest` (float32 results with rounding noise) and still reject 1e-6.
void expect_noise_admitted(DivergenceId id, std::initializer_list<double> honest) {
  const Case c = noisy_column_case(id);
  const Expected e = compute_reference(c);
  ASSERT_FALSE(e.loss.exact_zero.at(0));
  const double ref = e.loss.value.at(0);
  EXPECT_GT(ref, 0.0);
  EXPECT_LT(ref, 1e-40);  // ~1e-43: terms of (e^-48.3)^2 in exact arithmetic (float128)
  for (double got : honest)
    EXPECT_LE(std::fabs(got - ref), loss_bound(c, e)) << "got " << got << " scale " << e.loss.scale.at(0);
  EXPECT_GT(std::fabs(1e-6 - ref), loss_bound(c, e)) << "the bound must still catch a real error";
}

TEST(ReferenceNoisyProducts, HellingerAdmitsTheSquareOfOneUlpOfNoise) {
  const float diff = 1.0f - std::sqrt(kQ0);
  const float got = 0.5f * diff * diff;
  EXPECT_EQ(got, 0x1p-49f);
  expect_noise_admitted(DivergenceId::squared_hellinger_distance, {got, 0.0});  // 0: the CPU backend's
}

TEST(ReferenceNoisyProducts, JefferysAdmitsTheProductOfTwoNoisyFactors) {
  const float dp = 1.0f - kQ0;           // p - q: 2^-24
  const float d = 0.0f - std::log(kQ0);  // lp - lq: log of the float below 1, ~2^-24
  const float got = dp * d;              // ~2^-48
  EXPECT_GT(got, 3e-15f);
  expect_noise_admitted(DivergenceId::jefferys_divergence, {got});
}

}  // namespace
}  // namespace divcheck

// The float128 instance against the MPFR-50 instance, before rounding: they must agree on NaN,
// ±inf and exact zeros, and in value to float128's accuracy. float128 evaluates the same
// formulas with unit roundoff 2^-113 where float32 has 2^-24, so the same error analysis bounds
// its error by (c + sigma) 2^-113 * scale (scale in units of 2^-24 counts roundings, not u's),
// plus 1e-30 relative. After rounding, the two doubles must be equal or adjacent.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "reference/real_engine.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck {
namespace {

using ref::Float128;
using ref::Mpfr50;
using testing_ref::RandomOptions;
using testing_ref::random_case;
using testing_ref::set_reduction;

void compare(const ref::RealTensor<Float128>& a, const ref::RealTensor<Mpfr50>& b, double sigma, const std::string& what) {
  ASSERT_EQ(a.value.size(), b.value.size()) << what;
  // scale counts roundings of relative size 2^-113 each in float128: (c + sigma) 2^-113 per unit.
  const double per_scale = (16.0 + sigma) * std::ldexp(1.0, -113);
  for (std::size_t i = 0; i < a.value.size(); ++i) {
    const Mpfr50 x = ref::widen_exact(a.value[i]);
    const Mpfr50& y = b.value[i];
    if (ref::is_nan(y)) {
      EXPECT_TRUE(ref::is_nan(x)) << what << "[" << i << "]";
      continue;
    }
    if (ref::is_inf(y)) {
      EXPECT_TRUE(x == y) << what << "[" << i << "]";
      continue;
    }
    EXPECT_EQ(x == 0, y == 0) << what << "[" << i << "] exact zero disagrees";
    const Mpfr50 tol = Mpfr50(1e-30) * abs(y) + Mpfr50(per_scale) * Mpfr50(b.scale[i]);
    EXPECT_TRUE(abs(x - y) <= tol) << what << "[" << i << "]: mpfr " << static_cast<double>(y)
                                   << ", f128 - mpfr = " << static_cast<double>(x - y);
    const double dx = ref::round_to_odd(a.value[i]), dy = ref::round_to_odd(y);
    EXPECT_TRUE(dx == dy || std::nextafter(dx, dy) == dy) << what << "[" << i << "] " << dx << " vs " << dy;
    EXPECT_NEAR(a.scale[i], b.scale[i], 1e-12 * b.scale[i] + 1e-300) << what << " scale [" << i << "]";
  }
}

void check_case(const Case& c, double sigma) {
  validate_case(c);
  const auto a = ref::evaluate_real<Float128>(ref::RealInputs<Float128>(c));
  const auto b = ref::evaluate_real<Mpfr50>(ref::RealInputs<Mpfr50>(c));
  std::string name(name_of(c.id));
  compare(a.loss, b.loss, sigma, name + ": loss");
  for (const auto& [role, g] : a.grads) compare(g, b.grads.at(role), sigma, name + ": " + role);
}

TEST(ReferencePrecisionAgreement, EveryRowRandomCases) {
  for (int id_i = 0; id_i < static_cast<int>(kNumDivergences); ++id_i) {
    const auto id = static_cast<DivergenceId>(id_i);
    SCOPED_TRACE(std::string(name_of(id)));
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      RandomOptions o;
      o.V = 40;
      o.T = 4;
      o.logit_scale = seed == 3 ? 20.0 : 2.0;  // peaked rows: tiny probabilities, large |lp|
      o.dtype = seed == 2 ? DType::bf16 : DType::f32;
      Case c = random_case(id, seed, o);
      check_case(c, 17.0);
    }
  }
}

TEST(ReferencePrecisionAgreement, EdgeInputs) {
  // Near-identical rows (KL ~ 1e-14: cancellation), huge logits, -inf columns, capped CE.
  RandomOptions o;
  o.V = 30;
  Case kl = random_case(DivergenceId::masked_kl_divergence, 5, o);
  Tensor& x = kl.inputs["input_logits"];
  const Tensor& y = kl.inputs["target_logits"];
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, std::isnan(y.get(i)) ? y.get(i) : y.get(i) * (1 + 1e-7));
  check_case(kl, 17.0);
  for (DivergenceId id : {DivergenceId::jensen_shannon_divergence, DivergenceId::total_variation,
                          DivergenceId::masked_cross_entropy}) {
    Case c = random_case(id, 6, o);
    for (auto& [name, t] : c.inputs) {
      if (info(id).role(name)->kind != RoleKind::logits) continue;
      t.set(3, -std::numeric_limits<double>::infinity());
      t.set(4, 3e38);
      t.set(5, -3e38);
    }
    if (id == DivergenceId::masked_cross_entropy) c.params.max_loss = 2.0;
    check_case(c, 17.0);
  }
  Case none = random_case(DivergenceId::squared_hellinger_distance, 7, o);
  set_reduction(none, "none");
  check_case(none, 17.0);
}

}  // namespace
}  // namespace divcheck

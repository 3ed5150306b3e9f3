// round_to_odd (reference/real_types.hpp): exact values pass, inexact ones land on the odd
// neighbour, and the double it produces rounds to float32 exactly as a single correct rounding
// of the high-precision value (the reason it exists).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "reference/real_types.hpp"

namespace divcheck {
namespace {

using ref::Float128;
using ref::Mpfr50;
using ref::round_to_odd;

template <class R>
void check_basic() {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(round_to_odd(R(0)), 0.0);
  EXPECT_FALSE(std::signbit(round_to_odd(R(0))));
  EXPECT_EQ(round_to_odd(R(1)), 1.0);
  EXPECT_EQ(round_to_odd(R(0.1)), 0.1);  // the double 0.1 is exact in R
  EXPECT_EQ(round_to_odd(R(-3.5)), -3.5);
  // 1 + 2^-60: neighbours 1 (even) and 1 + 2^-52 (odd) -> the odd one.
  const R above_one = R(1) + R(std::ldexp(1.0, -60));
  EXPECT_EQ(round_to_odd(above_one), 1.0 + std::ldexp(1.0, -52));
  EXPECT_EQ(round_to_odd(R(-1) - R(std::ldexp(1.0, -60))), -(1.0 + std::ldexp(1.0, -52)));
  // 1 - 2^-80: neighbours 1 - 2^-53 (odd) and 1 (even) -> 1 - 2^-53.
  EXPECT_EQ(round_to_odd(R(1) - R(std::ldexp(1.0, -80))), 1.0 - std::ldexp(1.0, -53));
  // (1 + 2^-52) + 2^-60: nearest is 1 + 2^-52, already odd -> kept.
  EXPECT_EQ(round_to_odd(R(1.0 + std::ldexp(1.0, -52)) + R(std::ldexp(1.0, -60))), 1.0 + std::ldexp(1.0, -52));
  // Underflow keeps the sign and stays non-zero; overflow becomes inf.
  const R tiny = R(std::ldexp(1.0, -1000)) * R(std::ldexp(1.0, -200));
  EXPECT_EQ(round_to_odd(tiny), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(round_to_odd(R(-tiny)), -std::numeric_limits<double>::denorm_min());
  const R huge = R(std::ldexp(1.0, 1000)) * R(std::ldexp(1.0, 100));
  EXPECT_EQ(round_to_odd(huge), inf);
  EXPECT_EQ(round_to_odd(R(-huge)), -inf);
  EXPECT_EQ(round_to_odd(std::numeric_limits<R>::infinity()), inf);
  EXPECT_TRUE(std::isnan(round_to_odd(std::numeric_limits<R>::quiet_NaN())));
}

TEST(ReferenceRoundToOdd, BasicsFloat128) { check_basic<Float128>(); }
TEST(ReferenceRoundToOdd, BasicsMpfr50) { check_basic<Mpfr50>(); }

// The double-rounding trap: x just above a float32 midpoint whose nearest double IS the
// midpoint. Round-to-nearest twice gives the even float below; round-to-odd then nearest gives
// the correct float above.
TEST(ReferenceRoundToOdd, AvoidsDoubleRoundingAtFloatMidpoints) {
  const Float128 x = Float128(1.0 + std::ldexp(1.0, -24)) + Float128(std::ldexp(1.0, -80));
  EXPECT_EQ(static_cast<float>(static_cast<double>(x)), 1.0f);  // the trap
  EXPECT_EQ(static_cast<float>(round_to_odd(x)), 1.0f + std::ldexp(1.0f, -23));
  EXPECT_EQ(static_cast<float>(x), 1.0f + std::ldexp(1.0f, -23));  // correct single rounding
}

// For many values near float32 midpoints, float(round_to_odd(x)) == float(x) (quadmath's
// conversion of __float128 to float is a correct single rounding).
TEST(ReferenceRoundToOdd, EqualsSingleRoundingToFloat) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> ex(-140, 120), off(-90, -60), sgn(0, 1);
  for (int i = 0; i < 20000; ++i) {
    // A float32 midpoint (24 significant bits + 1) plus or minus a tiny offset.
    double m = std::ldexp(std::floor(std::ldexp(mant(rng), 24)) + 0.5, -24);
    Float128 x = Float128(std::ldexp(m, ex(rng)));
    x += (sgn(rng) ? 1 : -1) * Float128(std::ldexp(std::fabs(static_cast<double>(x)), off(rng)));
    if (i % 3 == 0) x = Float128(std::ldexp(mant(rng), ex(rng))) * Float128(1.0 + std::ldexp(1.0, off(rng)));
    ASSERT_EQ(static_cast<float>(round_to_odd(x)), static_cast<float>(x)) << static_cast<double>(x);
  }
}

}  // namespace
}  // namespace divcheck

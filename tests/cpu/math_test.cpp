// The shared pointwise formulas of kernels/math on their own: the exact values they promise
// (zeros at ties and at delta = 0, log 2 at p > 0 = q, slope 0 at ce = +inf), their agreement
// with double-precision evaluations of the formulas they stand for, and the summation order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/lane_sum.hpp"
#include "kernels/math/cross_entropy.hpp"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/jensen_shannon.hpp"
#include "kernels/math/kl.hpp"
#include "kernels/math/reduction_order.hpp"
#include "kernels/math/sign.hpp"
#include "kernels/math/softmax.hpp"

namespace divcheck::math {
namespace {

const double kU = std::ldexp(1.0, -24);
const float kNaNf = std::numeric_limits<float>::quiet_NaN();

TEST(MathSign, ThreeWayWithNaN) {
  EXPECT_EQ(sgn(2.5f), 1.0f);
  EXPECT_EQ(sgn(-1e-40f), -1.0f);  // subnormal
  EXPECT_EQ(sgn(0.0f), 0.0f);
  EXPECT_EQ(sgn(-0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(sgn(kNaNf)));
  // The tie branch is +0 whatever the sign of the coefficient; the seed bug returned -coef.
  EXPECT_EQ(tv_subgradient(0.0f, -0.0625f), 0.0f);
  EXPECT_FALSE(std::signbit(tv_subgradient(0.0f, -0.0625f)));
  EXPECT_FALSE(std::signbit(tv_subgradient(-0.0f, 0.5f)));
  EXPECT_EQ(tv_subgradient(1e-30f, 0.5f), 0.5f);
  EXPECT_EQ(tv_subgradient(-1e-30f, 0.5f), -0.5f);
  EXPECT_TRUE(std::isnan(tv_subgradient(kNaNf, 0.5f)));
}

TEST(MathJs, LogRatioExactPointsAndAccuracy) {
  for (const float z : {0.0f, -0.0f}) {  // identical columns: both exactly +0
    const JsRatios e = js_log_ratios(-1.5f, -1.5f + z);
    EXPECT_EQ(e.ep, 0.0f);
    EXPECT_EQ(e.eq, 0.0f);
    EXPECT_FALSE(std::signbit(e.ep));
    EXPECT_FALSE(std::signbit(e.eq));
  }
  EXPECT_EQ(js_log_ratios(-3.0f, -kInf).ep, kLn2);  // p > 0 = q: log(2p / p) = log 2
  EXPECT_EQ(js_log_ratios(-3.0f, -kInf).eq, -kInf);  // the caller multiplies by q = 0
  EXPECT_EQ(js_log_ratios(-kInf, -3.0f).eq, kLn2);
  EXPECT_EQ(js_log_ratios(-kInf, -3.0f).ep, -kInf);
  EXPECT_TRUE(std::isfinite(js_log_ratios(-1e30f, 0.0f).ep));  // no overflow of the exponential
  // e(d) = log(2 / (1 + e^-d)). The larger side (host: the C library's expf and logf): exp
  // (1 ulp, times w / s <= 1/2 in the log), the rounding of 1 + w, the log (1 ulp), the difference
  // from log 2: under 4u absolute next to log 2; the other side adds one subtraction (u of its
  // magnitude): 8u(|e| + log 2) covers both.
  for (float d = -60.0f; d <= 60.0f; d += 0.173f) {
    const JsRatios e = js_log_ratios(d - 7.0f, -7.0f);
    const double dd = static_cast<double>((d - 7.0f) - -7.0f);
    const double ep = std::log(2.0) - std::log1p(std::exp(-dd));
    const double eq = std::log(2.0) - std::log1p(std::exp(dd));
    EXPECT_NEAR(e.ep, ep, 8 * kU * (std::fabs(ep) + std::log(2.0))) << d;
    EXPECT_NEAR(e.eq, eq, 8 * kU * (std::fabs(eq) + std::log(2.0))) << d;
  }
}

// docs/tolerances.md ("c per row", Jensen-Shannon): the kernels' fast log-ratio
// ln 2 - log(1 + exp(-a)) spends at most (w/s)(2 e_a + a + 4) + 5 units of u (w = exp(-a),
// s = 1 + w; e_a >= 4 the scale of a), and c = 8 times the accurate form's scale,
// (w e_a + 1 - w)/s + e, exceeds that by at least 5 units for every a >= 0: the margin the
// document states, on a grid of a in (0, 40] and e_a in [4, 400].
TEST(MathJs, FastLogRatioFitsTheAccurateFormsScale) {
  double least = 1e300;
  for (double ea : {4.0, 5.0, 8.0, 40.0, 400.0})
    for (int i = 1; i <= 400000; ++i) {
      const double a = i * 1e-4;
      const double w = std::exp(-a), s = 1.0 + w, e = std::log(2.0) - std::log(s);
      const double budget = 8.0 * ((w * ea + 1.0 - w) / s + e);
      const double spent = (w / s) * (2.0 * ea + a + 4.0) + 5.0;
      least = std::min(least, budget - spent);
    }
  EXPECT_GE(least, 5.0 - 1e-3);
}

TEST(MathCrossEntropy, SechSquaredSlope) {
  EXPECT_EQ(capped_ce_slope(kInf, 2.0f, 3.0f), 0.0f);
  EXPECT_EQ(capped_ce(kInf, 2.0f, 3.0f), 2.0f);
  for (float ce : {0.0f, 0.01f, 0.5f, 3.0f, 20.0f, 40.0f}) {
    const double z = 3.0 * ce / 2.0;
    const double exact = 3.0 / (std::cosh(z) * std::cosh(z));
    // A handful of float operations around one exp: 16u relative (tiny values included, where
    // 1 - tanh^2 would have returned 0), plus the smallest subnormal 2^-149 for a value below
    // float's range (ce = 40: 3 sech^2(60) ~ 1e-51 rounds to 0).
    EXPECT_NEAR(capped_ce_slope(ce, 2.0f, 3.0f), exact, 16 * kU * exact + std::ldexp(1.0, -149)) << ce;
  }
}

TEST(MathSoftmax, ShiftedLogitKeepsPositiveProbabilitiesPositive) {
  EXPECT_EQ(shifted_logit(-kInf, 3.0f, 1.0f), -kInf);
  EXPECT_EQ(shifted_logit(-3e38f, 3e38f, 1.0f), -kFloatMax);   // -6e38 overflows: clamped
  EXPECT_EQ(shifted_logit(-9.0f, 1.0f, 1e-38f), -kFloatMax);  // -10 / 1e-38 overflows: clamped
  EXPECT_EQ(shifted_logit(5.0f, 7.0f, 1.0f), -2.0f);
  EXPECT_TRUE(poisons_row(kNaNf));
  EXPECT_TRUE(poisons_row(kInf));
  EXPECT_FALSE(poisons_row(-kInf));
  // The probability path falls back to the log-softmax value below FLT_MIN.
  const ProbAndLog tiny = prob_path_from_shifted(-100.0f, 1.0f, 0.0f);
  EXPECT_EQ(tiny.lp, -100.0f);
  const ProbAndLog zero = prob_path_from_shifted(-kInf, 2.0f, std::log(2.0f));
  EXPECT_EQ(zero.p, 0.0f);
  EXPECT_EQ(zero.lp, -kInf);
}

// T = 2^k: the kernels multiply by 2^-k where the formulas divide by T (PowerOfTwoTemperature).
// The identity RN(d / 2^k) = RN(d 2^-k) holds for every float d (the same real number, rounded
// once each); here for every k the form exists for and d over every exponent (random
// mantissas), the subnormals, zeros, the largest floats (overflow when k < 0), infinities and
// NaN; and every T that is not such a power of two is refused.
TEST(MathSoftmax, PowerOfTwoTemperatureDividesByMultiplying) {
  std::mt19937 rng(38);
  std::vector<float> d = {0.0f, -0.0f, kInf, -kInf, kNaNf, kFloatMax, -kFloatMax, kFloatMinNormal,
                          std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min()};
  for (std::uint32_t e = 0; e < 255; ++e)  // every exponent field (0: the subnormals), both signs
    for (int i = 0; i < 40; ++i) {
      const std::uint32_t bits = (e << 23) | (rng() & 0x7fffffu) | (i % 2 ? 0x80000000u : 0u);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      d.push_back(f);
    }
  int forms = 0;
  for (int k = -130; k <= 130; ++k) {
    const float t = std::ldexp(1.0f, k);
    PowerOfTwoTemperature p{};
    const bool is_form = power_of_two_temperature(t, p);
    ASSERT_EQ(is_form, k >= -126 && k <= 126) << "k " << k;  // 2^-k must be a normal float
    if (!is_form) continue;
    ++forms;
    ASSERT_EQ(p.inverse, std::ldexp(1.0f, -k)) << "k " << k;
    ASSERT_EQ(power_of_two_temperature_of(t).inverse, p.inverse) << "k " << k;  // the kernels' unchecked form
    for (float x : d) {
      const float a = divide_by_temperature(x, t), b = divide_by_temperature(x, p);
      std::uint32_t ba, bb;
      std::memcpy(&ba, &a, sizeof a);
      std::memcpy(&bb, &b, sizeof b);
      ASSERT_TRUE(ba == bb || (std::isnan(a) && std::isnan(b))) << "d " << x << " k " << k;
    }
    // The shared formulas take either form: the same bits.
    ASSERT_EQ(shifted_logit(-3.25f, 1.5f, t), shifted_logit(-3.25f, 1.5f, p));
  }
  EXPECT_EQ(forms, 253);
  PowerOfTwoTemperature p{};
  for (float t : {3.0f, 0.7f, 1.5f, std::nextafter(2.0f, 3.0f), -2.0f, 0.0f, kInf, kNaNf})
    EXPECT_FALSE(power_of_two_temperature(t, p)) << t;
  EXPECT_TRUE(power_of_two_temperature(1.0f, p));  // 2^0 (the launcher takes T = 1 first)
  EXPECT_EQ(p.inverse, 1.0f);
}

// The CUDA kernels' T = 2^k one-pass sums (docs/tolerances.md, "The tame one-pass sums at T = 2^k
// in units of T") take exactly 2 <= T <= 2^62, where log2(e) 2^-k and 2^-(64+k) are normal floats,
// and rest on d (log2(e) 2^-k) being (d 2^-k) log2(e) bit for bit and d_y 2^-k - d_x 2^-k being
// (d_y - d_x) 2^-k whenever d 2^-k is not subnormal: checked here for every such k over d of
// every exponent (random mantissas) with a normal d 2^-k, and over pairs of them.
TEST(MathSoftmax, PowerOfTwoTemperatureFoldsOutOfTheOneExchangeSums) {
  std::mt19937 rng(73);
  std::vector<float> d;
  for (std::uint32_t e = 1; e < 255; ++e)
    for (int i = 0; i < 24; ++i) {
      const std::uint32_t bits = (e << 23) | (rng() & 0x7fffffu) | (i % 2 ? 0x80000000u : 0u);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      d.push_back(f);
    }
  int folded = 0, checked = 0;
  for (int k = -126; k <= 126; ++k) {
    PowerOfTwoTemperature p{};
    ASSERT_TRUE(power_of_two_temperature(std::ldexp(1.0f, k), p));
    ASSERT_EQ(folds_into_one_pass_sums(p), k >= 1 && k <= 62) << "k " << k;
    if (!folds_into_one_pass_sums(p)) continue;
    ++folded;
    ASSERT_EQ(log2e_over(p), std::ldexp(kLog2e, -k)) << "k " << k;  // exact
    ASSERT_GE(math::kOnePassDown * p.inverse, kFloatMinNormal) << "k " << k;
    for (std::size_t i = 0; i < d.size(); ++i) {
      const float ts = d[i] * p.inverse;
      if (std::fabs(ts) < kFloatMinNormal || std::fabs(ts) > 64.0f) continue;  // tame rows: |t| <= 64
      ASSERT_EQ(d[i] * log2e_over(p), ts * kLog2e) << "d " << d[i] << " k " << k;
      const float e = d[(i * 7 + 3) % d.size()], te = e * p.inverse;
      if (std::fabs(te) < kFloatMinNormal || std::fabs(te) > 64.0f) continue;
      const float diff = (d[i] - e) * p.inverse;
      if (diff != 0.0f && std::fabs(diff) < kFloatMinNormal) continue;
      ASSERT_EQ(diff, ts - te) << "d " << d[i] << ", " << e << " k " << k;
      ++checked;
    }
  }
  EXPECT_EQ(folded, 62);
  EXPECT_GT(checked, 10000);
}

// Any other T (the CUDA kernels' plain_recip_t launches): the product by 1/T rounded once
// (ReciprocalTemperature). What docs/tolerances.md counts for it: at most two roundings, so every
// finite, normal result is within (2u + u^2)|d/T| of the exact quotient of the float T (one unit
// more than the division's u); the product is monotone in d (tame_side's argument); zeros stay
// exact zeros, -inf stays -inf, an overflowing quotient is -inf (which shifted_logit clamps as it
// clamps the division's); and for T = 2^k it is the division, bit for bit.
TEST(MathSoftmax, ReciprocalTemperatureErrsByTwoRoundingsAndKeepsOrder) {
  std::mt19937 rng(72);
  std::vector<float> d = {0.0f, -0.0f, -kInf, -kFloatMax, -kFloatMinNormal, -std::numeric_limits<float>::denorm_min()};
  for (std::uint32_t e = 0; e < 255; ++e)  // every exponent field, negative dividends (z - m <= 0)
    for (int i = 0; i < 40; ++i) {
      const std::uint32_t bits = (e << 23) | (rng() & 0x7fffffu) | 0x80000000u;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      d.push_back(f);
    }
  std::sort(d.begin(), d.end());
  const double u = std::ldexp(1.0, -24);
  int checked = 0;
  for (float t : {3.0f, 0.7f, 1.5f, 1.1f, 5.0f, 0.3f, 10.0f, 1e-30f, 1e30f, std::nextafter(1.0f, 2.0f),
                  std::nextafter(2.0f, 1.0f), std::nextafter(2.0f, 3.0f), 1.9999999f, 8.5e37f, 3e-38f}) {
    const ReciprocalTemperature r = reciprocal_temperature(t);
    ASSERT_EQ(r.inverse, 1.0f / t);
    float previous = -kInf;
    for (float x : d) {
      const float q = divide_by_temperature(x, r);
      ASSERT_GE(q, previous) << "not monotone at d " << x << " T " << t;
      previous = q;
      const double exact = static_cast<double>(x) / static_cast<double>(t);
      if (x == 0.0f) {
        ASSERT_EQ(q, 0.0f);
        continue;
      }
      if (std::isinf(x)) {
        ASSERT_EQ(q, -kInf);
        continue;
      }
      if (std::fabs(exact) > kFloatMax || std::fabs(exact) < kFloatMinNormal || std::isinf(q)) continue;
      ASSERT_LE(std::fabs(static_cast<double>(q) - exact), (2.0 * u + u * u) * std::fabs(exact)) << "d " << x << " T " << t;
      ++checked;
    }
    // The shared formulas take it as they take the others: the clamp of an overflowing product.
    EXPECT_EQ(shifted_logit(-kFloatMax, kFloatMax, r), -kFloatMax);
    EXPECT_EQ(shifted_logit(-kInf, 1.0f, r), -kInf);
    EXPECT_EQ(shifted_logit(2.5f, 2.5f, r), 0.0f);
  }
  EXPECT_GT(checked, 10000);
  for (int k = -126; k <= 126; ++k) {  // T = 2^k: the division's bits
    const float t = std::ldexp(1.0f, k);
    const ReciprocalTemperature r = reciprocal_temperature(t);
    for (float x : d) {
      const float a = divide_by_temperature(x, t), b = divide_by_temperature(x, r);
      ASSERT_TRUE(std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b))) << "d " << x << " k " << k;
    }
  }
}

TEST(MathSoftmax, OnlineLogsumexpMatchesTwoPass) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 10.0f);
  for (int n : {1, 7, 1000, 5000}) {
    std::vector<float> z(static_cast<std::size_t>(n));
    for (auto& x : z) x = nd(rng);
    OnlineLse a, b;
    for (int i = 0; i < n; ++i) (i % 2 ? a : b).add(z[static_cast<std::size_t>(i)]);
    a.merge(b);
    double m = -INFINITY, s = 0;
    for (float x : z) m = std::max(m, static_cast<double>(x));
    for (float x : z) s += std::exp(x - m);
    const double exact = m + std::log(s);
    // Each add rescales at most once and adds one term: the running sum's relative error grows
    // by ~3u per element (exp 1 ulp, multiply, add), so 3 n u relative in s, i.e. 3 n u
    // absolute in log s, plus u |m|.
    EXPECT_NEAR(a.logsumexp(), exact, 3.0 * n * kU + kU * std::fabs(exact)) << n;
  }
  OnlineLse empty;
  empty.add(-kInf);
  EXPECT_EQ(empty.logsumexp(), -kInf);
}

// softmax_term drops shifted_logit's -inf test and clamp: the fixed-point summand must not
// change for any logit (a -inf logit, an overflowing z - m, a tiny temperature).
TEST(MathSoftmax, SumTermWithoutClampGivesTheSameFixedPointSummand) {
  const float big = 3.0e38f;
  const float zs[] = {0.0f, -1.0f, -27.0f, -28.0f, -90.0f, -1e30f, -big, -kInf, 1e-30f};
  for (float m : {0.0f, 5.0f, big})
    for (float t : {1.0f, 2.0f, 1e-30f})
      for (float z0 : zs) {
        const float z = std::fmin(z0 + (m == big ? 0.0f : m), m);
        const std::uint64_t clamped = fixed_term(f_softmax_exp(shifted_logit(z, m, t)));
        EXPECT_EQ(fixed_term(softmax_term(z, m, t)), clamped) << z << " " << m << " " << t;
      }
}

// Squared Hellinger's tame roots (kernels/math/softmax.hpp softmax_column_tame_roots; docs/tolerances.md,
// "Tame roots of squared Hellinger"): the root's exponent is exactly half the folded probability's
// (so r * r stands for tame_prob_from_shifted's p), r errs by at most 1.12|lp| + 4 units and
// p = r * r by 2.24|lp| + 9 against exp((t - log S) / 2) and exp(t - log S) of the floats t and log S
// (the derivation is the doc's; the host's exp2 is within 1 unit, the device's ex2.approx within the
// 4 the bound spends), and both stay normal floats over the whole tame range (t >= -64,
// log S <= log 2^31).
TEST(MathSoftmax, TameRootsHalveTheFoldedExponentExactly) {
  std::mt19937 gen(77);
  std::uniform_real_distribution<float> shifted(-64.0f, 0.0f), log_norm(0.0f, 21.5f);
  double worst_r = 0.0, worst_p = 0.0;
  for (int i = 0; i < 200000; ++i) {
    float t = shifted(gen), log_s = log_norm(gen);
    if (i % 1000 == 0) t = 0.0f;        // the maximum's column
    if (i % 1000 == 1) t = kTameShift;  // the tame range's ends
    if (i % 1000 == 2) log_s = 21.5f;
    if (i % 1000 == 3) log_s = 0.0f;  // S = 1: one column holds the row
    const float c = tame_exp2_offset(log_s);
    const float half = std::fma(t, kHalfLog2e, 0.5f * c), whole = std::fma(t, kLog2e, c);
    ASSERT_EQ(half, 0.5f * whole) << t << " " << log_s;  // bitwise: every operand halved exactly
    const ProbLogRoot a = softmax_column_tame_roots(t, 0.0f, log_s, c, 1.0f);
    ASSERT_TRUE(std::isnormal(a.r) && std::isnormal(a.p)) << t << " " << log_s;
    const double lp = static_cast<double>(t) - static_cast<double>(log_s);
    const double r = std::exp(lp / 2), p = std::exp(lp);
    const double er = std::fabs(a.r - r) / (r * kU), ep = std::fabs(a.p - p) / (p * kU);
    const double bound_r = 1.12 * std::fabs(lp) + 4.0, bound_p = 2.0 * bound_r + 1.0;
    ASSERT_LE(er, bound_r) << t << " " << log_s;
    ASSERT_LE(ep, bound_p) << t << " " << log_s;
    worst_r = std::max(worst_r, er / bound_r);
    worst_p = std::max(worst_p, ep / bound_p);
    EXPECT_EQ(a.lp, log_softmax_from_shifted(t, log_s));
  }
  std::cout << "[ tame roots ] worst error of r and p in units of their bounds: " << worst_r << ", " << worst_p << "\n";
  EXPECT_GT(worst_r, 0.0);  // the comparison saw rounding (a bound of 0 would not be tested)
}

// The one-pass KL and cross-entropy of kernels/math/kl.hpp: the same special cases as kl_term
// and ce_term, exact zeros on identical rows, and the value of the two-pass sum to within the
// error the model allows (docs/tolerances.md).
TEST(MathOnePass, KlAndCrossEntropyFromTheNormaliserPass) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> ud(-12.0f, 12.0f);
  for (int n : {1, 2, 7, 300}) {
    std::vector<float> y(static_cast<std::size_t>(n)), x(y.size());
    for (std::size_t v = 0; v < y.size(); ++v) {
      y[v] = ud(rng);
      x[v] = ud(rng);
    }
    auto stats = [](const std::vector<float>& z, float& m, float& s, float& ls) {
      m = -kInf;
      for (float v : z) m = std::fmax(m, v);
      FixedSum f;
      for (float v : z) f.add(softmax_term(v, m, 1.0f));
      s = f.value();
      ls = std::log(s);
    };
    float my, sy, lsy, mx, sx, lsx;
    stats(y, my, sy, lsy);
    stats(x, mx, sx, lsx);
    float a = 0.0f, b = 0.0f, aa = 0.0f;
    // The tame forms (every logit here is within 24 of its maximum: tame), as the kernel sums
    // them: unscaled products, pairs fused (the last one of an odd n alone), 2^-64 at the end.
    float ta = 0.0f, tb = 0.0f, taa = 0.0f;
    long double kl = 0, ce = 0, scale = 0;
    for (std::size_t v = 0; v < y.size(); ++v) {
      const float ty = shifted_logit(y[v], my, 1.0f), tx = shifted_logit(x[v], mx, 1.0f);
      const float ey = f_softmax_exp(ty);
      a += kl_one_pass_term(ey, ty, tx);
      b += ce_one_pass_term(ey, ty, tx);
      aa += kl_one_pass_term(ey, ty, ty);
      ASSERT_TRUE(tame_side(y[v], my, 1.0f) && tame_side(x[v], mx, 1.0f));
      float f[3][2];
      kl_one_pass_factors_tame(ey, ty, tx, f[0][0], f[0][1]);
      ce_one_pass_factors_tame(ey, tx, f[1][0], f[1][1]);
      kl_one_pass_factors_tame(ey, ty, ty, f[2][0], f[2][1]);
      float* sums[3] = {&ta, &tb, &taa};
      for (int k = 0; k < 3; ++k) {
        if (v % 2 == 1) continue;  // added with its partner below
        float pair = f[k][0] * f[k][1];
        if (v + 1 < y.size()) {
          const float ty1 = shifted_logit(y[v + 1], my, 1.0f), tx1 = shifted_logit(x[v + 1], mx, 1.0f);
          const float ey1 = f_softmax_exp(ty1);
          float g0, g1;
          if (k == 0) kl_one_pass_factors_tame(ey1, ty1, tx1, g0, g1);
          else if (k == 1) ce_one_pass_factors_tame(ey1, tx1, g0, g1);
          else kl_one_pass_factors_tame(ey1, ty1, ty1, g0, g1);
          pair = std::fmaf(f[k][0], f[k][1], g0 * g1);
        }
        *sums[k] += pair;
      }
      const long double lp = static_cast<long double>(ty) - std::log(static_cast<long double>(sy));
      const long double lq = static_cast<long double>(tx) - std::log(static_cast<long double>(sx));
      kl += std::exp(lp) * (lp - lq);
      ce += -std::exp(lp) * lq;
      scale += std::exp(lp) * (4 + 2 * std::fabs(lp) + 2 * std::fabs(lq));
    }
    // (c + sigma) u scale, as the verdict: c = 8 (docs/tolerances.md), sigma = n for the
    // sequential sums above, scale a lower bound of the loss's running-error scale rs.
    const double bound = (8 + n) * kU * static_cast<double>(scale);
    EXPECT_NEAR(kl_from_one_pass(a, sy, lsy, lsx), static_cast<double>(kl), bound) << n;
    EXPECT_NEAR(ce_from_one_pass(b, sy, lsx), static_cast<double>(ce), bound) << n;
    EXPECT_EQ(kl_from_one_pass(aa, sy, lsy, lsy), 0.0f) << n;  // identical rows: exactly 0
    EXPECT_NEAR(kl_from_one_pass(ta * kOnePassDown, sy, lsy, lsx), static_cast<double>(kl), bound) << n;
    EXPECT_NEAR(ce_from_one_pass(tb * kOnePassDown, sy, lsx), static_cast<double>(ce), bound) << n;
    EXPECT_EQ(kl_from_one_pass(taa * kOnePassDown, sy, lsy, lsy), 0.0f) << n;
  }
  // Special cases, as kl_term / ce_term: p = 0 (t_y = -inf) contributes 0 whatever q is;
  // q = 0 < p gives +inf even when exp(t_y) underflows to 0 for a finite t_y.
  EXPECT_EQ(kl_one_pass_term(0.0f, -kInf, -kInf), 0.0f);
  EXPECT_EQ(kl_one_pass_term(0.0f, -kInf, -3.0f), 0.0f);
  EXPECT_EQ(kl_one_pass_term(0.0f, -200.0f, -kInf), kInf);
  EXPECT_EQ(kl_one_pass_term(0.5f, -0.7f, -kInf), kInf);
  EXPECT_EQ(ce_one_pass_term(0.0f, -kInf, -kInf), 0.0f);
  EXPECT_EQ(ce_one_pass_term(0.0f, -200.0f, -kInf), -kInf);
  EXPECT_EQ(ce_from_one_pass(-kInf, 1.0f, 0.5f), kInf);
  // The 2^-64 scaling keeps a sum of FLT_MAX-sized terms finite where K is.
  const float huge = kl_one_pass_term(1.0f, 0.0f, -3.0e38f) + kl_one_pass_term(1.0f, 0.0f, -3.0e38f);
  EXPECT_EQ(kl_from_one_pass(huge, 2.0f, std::log(2.0f), 0.0f), 3.0e38f - std::log(2.0f));
}

// The single exchange's rescale (kernels/cuda/row_reduce.cuh reduce_one_exchange): sums taken
// relative to each part's own maxima, moved to the row's by kl_one_pass_rescale /
// ce_one_pass_rescale, give K_p and ce within the same bound as the sums relative to the row's
// maxima; identical rows stay exactly 0; infinities (p > 0 = q) survive a factor that underflows.
TEST(MathOnePass, RescaledPartialSumsFromPartMaxima) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> ud(-12.0f, 12.0f);
  for (int n : {2, 7, 64, 300}) {
    for (int parts : {1, 2, 5}) {
      std::vector<float> y(static_cast<std::size_t>(n)), x(y.size());
      for (std::size_t v = 0; v < y.size(); ++v) {
        y[v] = ud(rng);
        x[v] = ud(rng) + (v % 3 == 0 ? -40.0f : 0.0f);  // parts whose maxima differ widely
      }
      float my = -kInf, mx = -kInf;
      for (std::size_t v = 0; v < y.size(); ++v) {
        my = std::fmax(my, y[v]);
        mx = std::fmax(mx, x[v]);
      }
      // Part k holds columns v with v % parts == k (as threads hold strided chunks).
      float sy = 0.0f, sx = 0.0f, a = 0.0f, b = 0.0f, aa = 0.0f, saa = 0.0f;
      for (int k = 0; k < parts; ++k) {
        float py = -kInf, px = -kInf;
        for (std::size_t v = static_cast<std::size_t>(k); v < y.size(); v += static_cast<std::size_t>(parts)) {
          py = std::fmax(py, y[v]);
          px = std::fmax(px, x[v]);
        }
        float ps = 0.0f, pxs = 0.0f, pa = 0.0f, pb = 0.0f, paa = 0.0f;
        for (std::size_t v = static_cast<std::size_t>(k); v < y.size(); v += static_cast<std::size_t>(parts)) {
          const float ty = shifted_logit(y[v], py, 1.0f), tx = shifted_logit(x[v], px, 1.0f);
          const float ey = f_softmax_exp(ty);
          ps += ey;
          pxs += f_softmax_exp(tx);
          pa += kl_one_pass_term(ey, ty, tx);
          pb += ce_one_pass_term(ey, ty, tx);
          paa += kl_one_pass_term(ey, ty, ty);
        }
        const float dy = shifted_logit(py, my, 1.0f), dx = shifted_logit(px, mx, 1.0f);
        const float fy = f_softmax_exp(dy), fx = f_softmax_exp(dx);
        a += kl_one_pass_rescale(pa, ps, fy, dy, dx);
        b += ce_one_pass_rescale(pb, ps, fy, dx);
        aa += kl_one_pass_rescale(paa, ps, fy, dy, dy);
        saa += ps * fy;
        sy += ps * fy;
        sx += pxs * fx;
      }
      long double kl = 0, ce = 0, scale = 0, ly = 0, lx = 0;
      for (std::size_t v = 0; v < y.size(); ++v) {
        ly += std::exp(static_cast<long double>(y[v]) - my);
        lx += std::exp(static_cast<long double>(x[v]) - mx);
      }
      for (std::size_t v = 0; v < y.size(); ++v) {
        const long double lp = static_cast<long double>(y[v]) - my - std::log(ly);
        const long double lq = static_cast<long double>(x[v]) - mx - std::log(lx);
        kl += std::exp(lp) * (lp - lq);
        ce += -std::exp(lp) * lq;
        scale += std::exp(lp) * (4 + 2 * std::fabs(lp) + 2 * std::fabs(lq));
      }
      // As the test above: (c + sigma) u scale with c = 8 and sigma = n + 4 (the sequential sums
      // of a part, the rescale products, the sequential sum over the parts).
      const double bound = (8 + n + 4) * kU * static_cast<double>(scale);
      const float lsy = std::log(sy), lsx = std::log(sx);
      EXPECT_NEAR(kl_from_one_pass(a, sy, lsy, lsx), static_cast<double>(kl), bound) << n << " " << parts;
      EXPECT_NEAR(ce_from_one_pass(b, sy, lsx), static_cast<double>(ce), bound) << n << " " << parts;
      EXPECT_EQ(aa, 0.0f);  // identical rows: every shift is d_y - d_y = 0, every term 0
      EXPECT_EQ(kl_from_one_pass(aa, saa, std::log(saa), std::log(saa)), 0.0f);
    }
  }
  // A part without a finite p-side logit (S_y = 0) contributes 0, whatever its maxima.
  EXPECT_EQ(kl_one_pass_rescale(0.0f, 0.0f, 0.0f, -kInf, -kInf), 0.0f);
  EXPECT_EQ(ce_one_pass_rescale(0.0f, 0.0f, 0.0f, -kInf), 0.0f);
  // p > 0 = q inside a part (its x side all -inf: d_x = -inf) is +inf for KL and -inf for B
  // (ce = +inf), also where the factor f_y underflows to 0.
  EXPECT_EQ(kl_one_pass_rescale(kInf, 3.0f, 0.0f, -200.0f, -kInf), kInf);
  EXPECT_EQ(kl_one_pass_rescale(1.0f, 3.0f, 0.5f, -0.7f, -kInf), kInf);
  EXPECT_EQ(ce_one_pass_rescale(-kInf, 3.0f, 0.0f, -kInf), -kInf);
  EXPECT_EQ(ce_one_pass_rescale(-1.0f, 3.0f, 0.5f, -kInf), -kInf);
  // f_y = 1, d = 0 (the part that holds the maxima): exact, A unchanged.
  EXPECT_EQ(kl_one_pass_rescale(0.25f, 3.0f, 1.0f, 0.0f, 0.0f), 0.25f);
  EXPECT_EQ(ce_one_pass_rescale(-0.25f, 3.0f, 1.0f, 0.0f), -0.25f);
}

TEST(MathReductionOrder, SkippingZeroWarpsIsExactAndTheOrderIsTheDocumentedOne) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  for (int active : {1, 31, 32, 33, 500, 1023, 1024}) {
    float a[kLanes], b[kLanes];
    for (int l = 0; l < kLanes; ++l) a[l] = b[l] = l < active ? ud(rng) : 0.0f;
    EXPECT_EQ(tree_reduce_lanes(a, active), tree_reduce_lanes(b)) << active;
  }
  // lane_sum of 1..n for n = 3000 in the documented order, replayed by hand.
  const std::int64_t n = 3000;
  float lanes[kLanes] = {};
  for (std::int64_t v = 0; v < n; ++v) lanes[v % kLanes] = lanes[v % kLanes] + 1.0f / static_cast<float>(v + 1);
  float warp_sums[kLanes / kWarpSize];
  for (int w = 0; w < kLanes / kWarpSize; ++w) {
    float x[kWarpSize];
    for (int i = 0; i < kWarpSize; ++i) x[i] = lanes[w * kWarpSize + i];
    for (int off = 16; off >= 1; off /= 2)
      for (int i = 0; i < off; ++i) x[i] = x[i] + x[i + off];
    warp_sums[w] = x[0];
  }
  for (int off = 16; off >= 1; off /= 2)
    for (int i = 0; i < off; ++i) warp_sums[i] = warp_sums[i] + warp_sums[i + off];
  EXPECT_EQ(cpu::lane_sum(n, [](std::int64_t v) { return 1.0f / static_cast<float>(v + 1); }), warp_sums[0]);
}

}  // namespace
}  // namespace divcheck::math

namespace divcheck::math {
namespace {

TEST(MathExactSum, OrderIndependentAndCorrectlyRounded) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> ud(-30.0f, 0.0f);
  for (int n : {1, 3, 1000, 70000}) {
    std::vector<float> e(static_cast<std::size_t>(n));
    for (auto& x : e) x = std::exp(ud(rng));
    e[0] = 1.0f;
    FixedSum a, b, c;
    for (float x : e) a.add(x);
    std::shuffle(e.begin(), e.end(), rng);
    for (std::size_t i = 0; i < e.size(); ++i) (i % 3 ? b : c).add(e[i]);
    b.merge(c);
    EXPECT_EQ(a.value(), b.value()) << n;  // bitwise, whatever the order and the split
    // The exact sum of the truncated terms is within n 2^-40 of the true sum; then one rounding.
    long double exact = 0;
    for (float x : e) exact += static_cast<long double>(x);
    EXPECT_NEAR(a.value(), static_cast<double>(exact), kU * static_cast<double>(exact) + n * std::ldexp(1.0, -40)) << n;
  }
  // Rounding to nearest even at a tie: 1 + 2^-24 exactly is halfway between 1 and 1 + 2^-23.
  FixedSum t;
  t.add(1.0f);
  t.add(std::ldexp(1.0f, -24));
  EXPECT_EQ(t.value(), 1.0f);
  t.add(std::ldexp(1.0f, -39));  // now above the halfway point: rounds up
  EXPECT_EQ(t.value(), 1.0f + std::ldexp(1.0f, -23));
  // Terms below the quantum 2^-40 are truncated away: exactly, whatever their number.
  FixedSum q;
  q.add(1.0f);
  for (int i = 0; i < 1000; ++i) q.add(std::ldexp(1.0f, -41));
  EXPECT_EQ(q.lo, std::uint64_t{1} << 40);
  // Past 2^64 (the carry word in use): (2^24 - 1) ones plus one more carry into hi.
  FixedSum h;
  h.lo = ~std::uint64_t{0} - (std::uint64_t{1} << 40) + 1;  // (2^24 - 1) 2^40
  h.add(1.0f);
  EXPECT_EQ(h.hi, 1u);
  EXPECT_EQ(h.lo, 0u);
  EXPECT_EQ(h.value(), std::ldexp(1.0f, 24));
  FixedSum h2 = h;
  h2.merge(h);  // 2^25
  EXPECT_EQ(h2.value(), std::ldexp(1.0f, 25));
  h2.add(1.0f);
  h2.add(1.0f);  // 2^25 + 2: the tie between 2^25 and 2^25 + 4 (the float spacing there): even is 2^25
  EXPECT_EQ(h2.value(), std::ldexp(1.0f, 25));
  h2.add(std::ldexp(1.0f, -39));  // above the tie (the sticky bit of the low word): rounds up
  EXPECT_EQ(h2.value(), std::ldexp(1.0f, 25) + 4.0f);
}

}  // namespace
}  // namespace divcheck::math

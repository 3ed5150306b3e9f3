// dtype conversions: exhaustive 16-bit decode/encode round trips, float -> bf16/f16 against an
// independent reference rounding (exact in double), double -> bf16/f16 single rounding where a
// double -> float -> 16-bit path would round twice, and the round-to-odd building block.
#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.hpp"

namespace divcheck {
namespace {

// A binary floating-point format with `precision` significant bits (implicit bit included),
// smallest normal exponent `emin`, and largest finite value `max`.
struct Format {
  int precision;
  int emin;
  double max;
};
// bf16: 8 significant bits, exponent range of float; max = (2 - 2^-7) * 2^127.
const Format kBF16{8, -126, std::ldexp(2.0 - std::ldexp(1.0, -7), 127)};
// f16: 11 significant bits, emin = -14, max = (2 - 2^-10) * 2^15 = 65504.
const Format kF16{11, -14, 65504.0};

// Reference: x rounded to the format, to nearest, ties to even, overflow to inf. Independent of
// the implementation: it finds the two neighbours lo <= |x| < lo + quantum on the format's grid
// and compares |x| - lo (exact in double: both are multiples of ulp(|x|) and the difference has
// at most 53 bits) with quantum / 2 (exact, a power of two).
double reference_round(double x, const Format& f) {
  if (x == 0.0 || std::isnan(x) || std::isinf(x)) return x;
  const double a = std::fabs(x);
  const int e = std::ilogb(a);
  const double quantum = std::ldexp(1.0, std::max(e, f.emin) - (f.precision - 1));
  const double lo = std::floor(a / quantum) * quantum;  // a / quantum is exact (power-of-two scaling)
  const double hi = lo + quantum;
  const double below = a - lo, half = quantum / 2;
  double r;
  if (below < half) r = lo;
  else if (below > half) r = hi;
  else r = std::fmod(lo / quantum, 2.0) == 0.0 ? lo : hi;
  if (r > f.max) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, x);
}

// Independent decoders: the value of a bit pattern by the IEEE formula.
double bf16_value(std::uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exp = (h >> 7) & 0xff, mant = h & 0x7f;
  if (exp == 0xff) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -133);
  return sign * std::ldexp(1.0 + mant / 128.0, exp - 127);
}
double f16_value(std::uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1.0 + mant / 1024.0, exp - 15);
}

// Independent encoders of a value that is exactly representable in the format (or ±inf).
std::uint16_t bf16_bits_of(double r) {
  // A bf16 value is a float whose low 16 bits are zero; the float conversion is exact.
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(r)) >> 16);
}
std::uint16_t f16_bits_of(double r) {
  const std::uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  const double a = std::fabs(r);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) return sign | static_cast<std::uint16_t>(a / std::ldexp(1.0, -24));
  const int e = std::ilogb(a);
  const auto mant = static_cast<std::uint16_t>((std::ldexp(a, -e) - 1.0) * 1024.0);
  return static_cast<std::uint16_t>(sign | ((e + 15) << 10) | mant);
}

bool bf16_is_nan(std::uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }
bool f16_is_nan(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

// Every non-negative finite value of a format in increasing order, and the midpoints between
// consecutive ones (including the overflow threshold max + quantum/2): the tie points.
std::vector<double> finite_values(double (*value)(std::uint16_t), std::uint16_t last_finite) {
  std::vector<double> v;
  for (std::uint32_t h = 0; h <= last_finite; ++h) v.push_back(value(static_cast<std::uint16_t>(h)));
  return v;
}
std::vector<double> midpoints(const std::vector<double>& values, const Format& f) {
  std::vector<double> m;
  for (std::size_t i = 0; i + 1 < values.size(); ++i) m.push_back((values[i] + values[i + 1]) / 2);  // exact
  const double top_quantum = std::ldexp(1.0, std::ilogb(f.max) - (f.precision - 1));
  m.push_back(f.max + top_quantum / 2);  // overflow threshold: 65520 for f16
  return m;
}

// ---------------------------------------------------------------------------------------------

TEST(DType, Bf16DecodeMatchesIeeeFormulaForEveryPattern) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float got = bf16_to_float(b);
    const double want = bf16_value(b);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << h;
    }
  }
}

TEST(DType, F16DecodeMatchesIeeeFormulaForEveryPattern) {
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float got = f16_to_float(b);
    const double want = f16_value(b);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << h;
    }
  }
}

TEST(DType, Bf16EveryPatternRoundTripsThroughFloat) {
  int nans = 0;
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const std::uint16_t back = float_to_bf16(bf16_to_float(b));
    if (bf16_is_nan(b)) {
      EXPECT_TRUE(bf16_is_nan(back)) << std::hex << h;
      ++nans;
    } else {
      ASSERT_EQ(back, b) << std::hex << h;
    }
    // The double path must agree: the value is exact, so no rounding happens.
    if (!bf16_is_nan(b)) {
      ASSERT_EQ(double_to_bf16(bf16_to_float(b)), b) << std::hex << h;
    }
  }
  EXPECT_EQ(nans, 2 * 127);  // 2 signs x (2^7 - 1) non-zero mantissas
}

TEST(DType, F16EveryPatternRoundTripsThroughFloat) {
  int nans = 0;
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const std::uint16_t back = float_to_f16(f16_to_float(b));
    if (f16_is_nan(b)) {
      EXPECT_TRUE(f16_is_nan(back)) << std::hex << h;
      ++nans;
    } else {
      ASSERT_EQ(back, b) << std::hex << h;
    }
    if (!f16_is_nan(b)) {
      ASSERT_EQ(double_to_f16(f16_to_float(b)), b) << std::hex << h;
    }
  }
  EXPECT_EQ(nans, 2 * 1023);
}

// The reference itself, checked on hand-derived points so that it cannot agree with a wrong
// implementation by sharing its mistake.
TEST(DType, ReferenceRoundingHandDerivedPoints) {
  // f16 spacing in [1, 2) is 2^-10; 1 + 2^-11 is the tie between 1 (even) and 1 + 2^-10 (odd).
  EXPECT_EQ(reference_round(1.0 + std::ldexp(1.0, -11), kF16), 1.0);
  // 1 + 3*2^-11 is the tie between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(reference_round(1.0 + 3 * std::ldexp(1.0, -11), kF16), 1.0 + std::ldexp(1.0, -9));
  // 65504 + 16 = 65520 is the tie between max (mantissa 0x3ff, odd) and 2^16: rounds to inf.
  EXPECT_TRUE(std::isinf(reference_round(65520.0, kF16)));
  EXPECT_EQ(reference_round(65519.99, kF16), 65504.0);
  // Smallest f16 subnormal 2^-24; half of it is a tie between 0 (even) and 2^-24 (odd).
  EXPECT_EQ(reference_round(std::ldexp(1.0, -25), kF16), 0.0);
  EXPECT_EQ(reference_round(std::ldexp(1.5, -25), kF16), std::ldexp(1.0, -24));
  EXPECT_EQ(reference_round(std::ldexp(3.0, -25), kF16), std::ldexp(2.0, -24));  // tie 1 vs 2 quanta: even
  // bf16: spacing in [1, 2) is 2^-7.
  EXPECT_EQ(reference_round(1.0 + std::ldexp(1.0, -8), kBF16), 1.0);
  EXPECT_EQ(reference_round(1.0 + std::ldexp(3.0, -8), kBF16), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(reference_round(std::ldexp(1.0, -134), kBF16), 0.0);  // half the smallest bf16 subnormal
  EXPECT_TRUE(std::isinf(reference_round(std::ldexp(2.0 - std::ldexp(1.0, -8), 127), kBF16)));
}

void check_float_to_bf16(float x) {
  const std::uint16_t got = float_to_bf16(x);
  if (std::isnan(x)) {
    ASSERT_TRUE(bf16_is_nan(got)) << x;
    return;
  }
  ASSERT_EQ(got, bf16_bits_of(reference_round(x, kBF16))) << std::hexfloat << x;
}
void check_float_to_f16(float x) {
  const std::uint16_t got = float_to_f16(x);
  if (std::isnan(x)) {
    ASSERT_TRUE(f16_is_nan(got)) << x;
    return;
  }
  ASSERT_EQ(got, f16_bits_of(reference_round(x, kF16))) << std::hexfloat << x;
}

// All float bit patterns at a prime stride (about 4.3 million, every exponent and sign).
TEST(DType, FloatToBf16MatchesReferenceOnStridedPatterns) {
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 997) {
    check_float_to_bf16(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
    if (HasFatalFailure()) return;
  }
}
TEST(DType, FloatToF16MatchesReferenceOnStridedPatterns) {
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 997) {
    check_float_to_f16(std::bit_cast<float>(static_cast<std::uint32_t>(u)));
    if (HasFatalFailure()) return;
  }
}

// Every tie point (a float for both formats: a midpoint needs one more bit than the format),
// its float neighbours on both sides, both signs: halfway cases, the largest finite value, the
// overflow threshold, the whole subnormal range and half the smallest subnormal.
TEST(DType, FloatToBf16AtEveryTiePointAndItsNeighbours) {
  for (double m : midpoints(finite_values(bf16_value, 0x7f7f), kBF16)) {
    const auto f = static_cast<float>(m);
    ASSERT_EQ(static_cast<double>(f), m);
    for (float x : {f, std::nextafter(f, 0.0f), std::nextafter(f, INFINITY)}) {
      check_float_to_bf16(x);
      check_float_to_bf16(-x);
      if (HasFatalFailure()) return;
    }
  }
}
TEST(DType, FloatToF16AtEveryTiePointAndItsNeighbours) {
  for (double m : midpoints(finite_values(f16_value, 0x7bff), kF16)) {
    const auto f = static_cast<float>(m);
    ASSERT_EQ(static_cast<double>(f), m);
    for (float x : {f, std::nextafter(f, 0.0f), std::nextafter(f, INFINITY)}) {
      check_float_to_f16(x);
      check_float_to_f16(-x);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(DType, Float16BitBoundaries) {
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_f16(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(float_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16(std::ldexp(1023.5f, -24)), 0x0400);  // top subnormal tie rounds to smallest normal
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // beyond bf16's threshold
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(std::ldexp(1.0f, -134)), 0x0000);
  EXPECT_EQ(float_to_bf16(std::ldexp(1.5f, -134)), 0x0001);
}

// double -> 16-bit must round once. Just above (or below) a tie point m, the double x rounds to
// float exactly m when |x - m| < ulp_float(m)/2, and the tie then goes to even: double rounding
// is wrong for every such x on the odd side. The test confirms that the naive path fails on
// these inputs (so the inputs have teeth) and that double_to_* does not.
template <class Value, class Bits, class Direct, class Naive>
void check_double_rounding(const Format& f, Value value, std::uint16_t last_finite, Bits bits_of, Direct direct,
                           Naive naive) {
  int naive_wrong = 0, checked = 0;
  for (double m : midpoints(finite_values(value, last_finite), f)) {
    const double ulp_f = m == 0 ? 0 : std::ldexp(1.0, std::max(std::ilogb(m), -126) - 23);
    std::vector<double> xs = {m, std::nextafter(m, 0.0), std::nextafter(m, INFINITY), m + ulp_f / 4, m - ulp_f / 4,
                              m + ulp_f * 0.75, m - ulp_f * 0.75, m + ulp_f / 2, m - ulp_f / 2};
    for (double x : xs) {
      if (!(x > 0)) continue;
      for (double s : {x, -x}) {
        const std::uint16_t want = bits_of(reference_round(s, f));
        ASSERT_EQ(direct(s), want) << std::hexfloat << s;
        naive_wrong += naive(s) != want;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100000);
  EXPECT_GT(naive_wrong, 1000) << "the inputs no longer distinguish single from double rounding";
}

TEST(DType, DoubleToBf16RoundsOnceNearEveryTiePoint) {
  check_double_rounding(kBF16, bf16_value, 0x7f7f, bf16_bits_of, double_to_bf16,
                        [](double x) { return float_to_bf16(static_cast<float>(x)); });
}
TEST(DType, DoubleToF16RoundsOnceNearEveryTiePoint) {
  check_double_rounding(kF16, f16_value, 0x7bff, f16_bits_of, double_to_f16,
                        [](double x) { return float_to_f16(static_cast<float>(x)); });
}

// Random doubles with exponents from far below the subnormals to far beyond the overflow.
TEST(DType, DoubleTo16BitMatchesReferenceOnRandomDoubles) {
  std::mt19937_64 rng(20240611);
  for (int i = 0; i < 1000000; ++i) {
    const int e = static_cast<int>(rng() % 400) - 200;
    const double mant = 1.0 + static_cast<double>(rng() >> 12) * 0x1.0p-52;
    const double x = std::ldexp(rng() % 2 ? mant : -mant, e);
    ASSERT_EQ(double_to_bf16(x), bf16_bits_of(reference_round(x, kBF16))) << std::hexfloat << x;
    ASSERT_EQ(double_to_f16(x), f16_bits_of(reference_round(x, kF16))) << std::hexfloat << x;
  }
  EXPECT_EQ(double_to_f16(std::numeric_limits<double>::max()), 0x7c00);
  EXPECT_EQ(double_to_bf16(-std::numeric_limits<double>::max()), 0xff80);
  EXPECT_EQ(double_to_f16(std::numeric_limits<double>::denorm_min()), 0x0000);
  EXPECT_EQ(double_to_bf16(-std::numeric_limits<double>::denorm_min()), 0x8000);
  EXPECT_TRUE(f16_is_nan(double_to_f16(std::nan(""))));
  EXPECT_TRUE(bf16_is_nan(double_to_bf16(std::nan(""))));
}

// Truncation toward zero by the hardware (an independent way to get the lower neighbour).
__attribute__((noinline)) float truncate_to_float(double x) {
  const int old = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  volatile double in = x;
  volatile float out = static_cast<float>(in);
  std::fesetround(old);
  return out;
}

// round_to_odd_float: exact values unchanged; otherwise the one of the two float neighbours of
// x whose last bit is odd (the truncation if it is odd, else the next float away from zero).
TEST(DType, RoundToOddFloatProperties) {
  std::mt19937_64 rng(7);
  int inexact = 0;
  for (int i = 0; i < 2000000; ++i) {
    double x;
    if (i % 2) {
      x = std::bit_cast<double>(rng());  // anything, including NaN, inf, huge and tiny
    } else {
      const int e = static_cast<int>(rng() % 320) - 160;  // around float's range
      x = std::ldexp(1.0 + static_cast<double>(rng() >> 12) * 0x1.0p-52, e);
      if (i % 4 == 0) x = static_cast<float>(x);  // exactly representable
      if (rng() % 2) x = -x;
    }
    const float r = round_to_odd_float(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(r));
      continue;
    }
    if (std::isinf(x)) {
      ASSERT_EQ(static_cast<double>(r), x);
      continue;
    }
    const float t = truncate_to_float(x);
    if (static_cast<double>(t) == x) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(r), std::bit_cast<std::uint32_t>(t)) << std::hexfloat << x;
      continue;
    }
    ++inexact;
    const auto tb = std::bit_cast<std::uint32_t>(t);
    const float want = (tb & 1u) ? t : std::bit_cast<float>(tb + 1u);  // +1 on the magnitude bits: away from 0
    ASSERT_EQ(std::bit_cast<std::uint32_t>(r), std::bit_cast<std::uint32_t>(want)) << std::hexfloat << x;
    ASSERT_TRUE(std::bit_cast<std::uint32_t>(r) & 1u);
    ASSERT_TRUE(std::isfinite(r)) << std::hexfloat << x;  // beyond FLT_MAX: FLT_MAX (odd), never inf
  }
  EXPECT_GT(inexact, 500000);
  EXPECT_EQ(round_to_odd_float(1e300), std::numeric_limits<float>::max());
  EXPECT_EQ(std::bit_cast<std::uint32_t>(round_to_odd_float(-1e-300)), 0x80000001u);
}

TEST(DType, NamesSizesAndConstants) {
  const DType all[] = {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i64,
                       DType::i32, DType::i16,  DType::i8,  DType::u8,  DType::boolean};
  const char* st[] = {"F32", "BF16", "F16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"};
  const std::size_t sizes[] = {4, 2, 2, 8, 8, 4, 2, 1, 1, 1};
  for (std::size_t i = 0; i < std::size(all); ++i) {
    EXPECT_EQ(safetensors_name(all[i]), st[i]);
    DType back;
    ASSERT_TRUE(parse_safetensors_name(st[i], back));
    EXPECT_EQ(back, all[i]);
    ASSERT_TRUE(parse_short_name(short_name(all[i]), back));
    EXPECT_EQ(back, all[i]);
    EXPECT_EQ(element_size(all[i]), sizes[i]);
    EXPECT_EQ(is_floating(all[i]), i < 4);
    EXPECT_EQ(is_integer_or_bool(all[i]), i >= 4);
  }
  DType dummy;
  EXPECT_FALSE(parse_safetensors_name("F8_E4M3", dummy));
  EXPECT_FALSE(parse_safetensors_name("f32", dummy));  // case matters in the file format
  EXPECT_EQ(max_finite(DType::bf16), kBF16.max);
  EXPECT_EQ(max_finite(DType::f16), 65504.0);
  EXPECT_EQ(min_subnormal(DType::bf16), std::ldexp(1.0, -133));
  EXPECT_EQ(min_subnormal(DType::f16), std::ldexp(1.0, -24));
  EXPECT_EQ(unit_roundoff(DType::bf16), std::ldexp(1.0, -8));
  EXPECT_EQ(unit_roundoff(DType::f16), std::ldexp(1.0, -11));
  EXPECT_EQ(round_to_dtype(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), DType::f16), 1.0 + std::ldexp(1.0, -10));
}

}  // namespace
}  // namespace divcheck

// Tensor: element get/set round trips for every dtype, raw 16-bit access, from_bytes size check,
// shape_numel overflow and sign checks, bitwise equality, mask non-zero semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/tensor.hpp"

namespace divcheck {
namespace {

// Values exactly representable in each dtype (so set-then-get must return them unchanged).
std::vector<double> representable(DType dt) {
  switch (dt) {
    case DType::f32:
      return {0.0, -0.0, 1.0, -2.5, 0x1.fffffep+127, -0x1.fffffep+127, 0x1p-149, 0x1.234566p-3, INFINITY, -INFINITY};
    case DType::bf16: return {0.0, -0.0, 1.0, -3.0, 0x1.fep+127, 0x1p-133, 0x1.7p-100, INFINITY};
    case DType::f16: return {0.0, -0.0, 1.0, 65504.0, -65504.0, 0x1p-24, 0x1.ff8p-15, 0x1.004p0, -INFINITY};
    case DType::f64: return {0.0, -0.0, 0.1, std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min()};
    case DType::i64: return {0.0, -1.0, 0x1p53, -0x1p53, -0x1p63, 1234567890123.0};
    case DType::i32: return {0.0, -1.0, 2147483647.0, -2147483648.0};
    case DType::i16: return {0.0, -1.0, 32767.0, -32768.0};
    case DType::i8: return {0.0, -1.0, 127.0, -128.0, -100.0};
    case DType::u8: return {0.0, 1.0, 255.0};
    case DType::boolean: return {0.0, 1.0};
  }
  return {};
}

const DType kAll[] = {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i64,
                      DType::i32, DType::i16,  DType::i8,  DType::u8,  DType::boolean};

TEST(Tensor, SetGetRoundTripsForEveryDType) {
  for (DType dt : kAll) {
    SCOPED_TRACE(std::string(short_name(dt)));
    const auto values = representable(dt);
    Tensor t(dt, {static_cast<std::int64_t>(values.size())});
    EXPECT_EQ(t.nbytes(), values.size() * element_size(dt));
    for (std::size_t i = 0; i < values.size(); ++i) t.set(static_cast<std::int64_t>(i), values[i]);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double got = t.get(static_cast<std::int64_t>(i));
      EXPECT_EQ(got, values[i]) << i;
      EXPECT_EQ(std::signbit(got), std::signbit(values[i])) << i;
    }
  }
}

TEST(Tensor, FloatSetRoundsOnceAndKeepsNaN) {
  Tensor t(DType::bf16, {2});
  t.set(0, std::nan(""));
  EXPECT_TRUE(std::isnan(t.get(0)));
  // 1 + 2^-8 + 2^-40 is just above the tie between 1 and 1 + 2^-7: once-rounded gives 1 + 2^-7.
  t.set(1, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40));
  EXPECT_EQ(t.get(1), 1.0 + std::ldexp(1.0, -7));
  Tensor h(DType::f16, {1});
  h.set(0, 1e6);  // beyond 65520: inf
  EXPECT_TRUE(std::isinf(h.get(0)));
}

TEST(Tensor, BoolStoresNonZeroAsOne) {
  Tensor t(DType::boolean, {3});
  t.set(0, 7.0);
  t.set(1, -0.5);
  t.set(2, 0.0);
  EXPECT_EQ(t.get(0), 1.0);
  EXPECT_EQ(t.get(1), 1.0);
  EXPECT_EQ(t.get(2), 0.0);
  EXPECT_EQ(std::to_integer<int>(t.data()[0]), 1);
}

TEST(Tensor, Bits16AccessIsRawPattern) {
  for (DType dt : {DType::bf16, DType::f16}) {
    Tensor t(dt, {4});
    const std::uint16_t patterns[] = {0x0000, 0x8001, 0x7c01, 0xffff};
    for (int i = 0; i < 4; ++i) t.set_bits16(i, patterns[i]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(t.get_bits16(i), patterns[i]);
  }
  Tensor t(DType::f16, {1});
  t.set(0, 1.5);
  EXPECT_EQ(t.get_bits16(0), 0x3e00);  // 1.5 = 0 01111 1000000000
}

TEST(Tensor, GetF32IsExactForFloatDTypes) {
  Tensor t(DType::bf16, {1});
  t.set_bits16(0, 0x3f81);  // 1 + 2^-7
  EXPECT_EQ(t.get_f32(0), 1.0f + 0x1p-7f);
  Tensor h(DType::f16, {1});
  h.set_bits16(0, 0x0001);
  EXPECT_EQ(h.get_f32(0), 0x1p-24f);
}

TEST(Tensor, NonzeroTreatsNaNAsNonzeroAndMinusZeroAsZero) {
  Tensor t(DType::f32, {3});
  t.set(0, -0.0);
  t.set(1, std::nan(""));
  t.set(2, 1e-40);
  EXPECT_FALSE(t.nonzero(0));
  EXPECT_TRUE(t.nonzero(1));
  EXPECT_TRUE(t.nonzero(2));
}

TEST(Tensor, FromBytesChecksTheSize) {
  std::vector<std::byte> six(6);
  Tensor ok = Tensor::from_bytes(DType::i16, {3}, six);
  EXPECT_EQ(ok.numel(), 3);
  try {
    (void)Tensor::from_bytes(DType::f32, {2}, six);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("6"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)Tensor::from_bytes(DType::f32, {}, {}), InvalidArgument);  // a scalar needs 4 bytes
  EXPECT_THROW((void)Tensor::from_bytes(DType::f32, {-1}, {}), InvalidArgument);
  Tensor empty = Tensor::from_bytes(DType::f64, {0, 7}, {});
  EXPECT_EQ(empty.numel(), 0);
}

TEST(Tensor, ShapeNumel) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({2, 3, 5}), 30);
  EXPECT_EQ(shape_numel({0, std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max()}), 0);
  EXPECT_EQ(shape_numel({std::int64_t{1} << 31, std::int64_t{1} << 31}), std::int64_t{1} << 62);
  try {
    (void)shape_numel({std::int64_t{1} << 32, std::int64_t{1} << 32});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "shape");
    EXPECT_NE(std::string(e.what()).find("(4294967296, 4294967296)"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)shape_numel({3, -2}), InvalidArgument);
  EXPECT_THROW((void)Tensor(DType::f32, {-1}), InvalidArgument);
  EXPECT_EQ(shape_string({}), "()");
  EXPECT_EQ(shape_string({2, 3}), "(2, 3)");
}

TEST(Tensor, BitwiseEqualComparesDTypeShapeAndBytes) {
  Tensor a(DType::f32, {2});
  Tensor b(DType::f32, {2});
  EXPECT_TRUE(a.bitwise_equal(b));
  b.set(1, -0.0);  // equal as numbers, different bits
  EXPECT_FALSE(a.bitwise_equal(b));
  EXPECT_FALSE(a.bitwise_equal(Tensor(DType::i32, {2})));
  EXPECT_FALSE(a.bitwise_equal(Tensor(DType::f32, {2, 1})));
  Tensor n1(DType::f32, {1}), n2(DType::f32, {1});
  n1.set(0, std::nan(""));
  n2.set(0, std::nan(""));
  EXPECT_TRUE(n1.bitwise_equal(n2));  // same NaN bits
}

TEST(Tensor, ScalarAndDefault) {
  Tensor s = Tensor::scalar_f32(2.5f);
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.get(0), 2.5);
  EXPECT_FALSE(s.empty_tensor());
  EXPECT_TRUE(Tensor().empty_tensor());
}

}  // namespace
}  // namespace divcheck

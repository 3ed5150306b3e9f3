#include "core/dtype.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace divcheck {

namespace {
struct DTypeInfo {
  DType dt;
  const char* st_name;
  const char* short_name;
  std::size_t size;
};
constexpr DTypeInfo kInfo[] = {
    {DType::f32, "F32", "f32", 4},    {DType::bf16, "BF16", "bf16", 2}, {DType::f16, "F16", "f16", 2},
    {DType::f64, "F64", "f64", 8},    {DType::i64, "I64", "i64", 8},    {DType::i32, "I32", "i32", 4},
    {DType::i16, "I16", "i16", 2},    {DType::i8, "I8", "i8", 1},       {DType::u8, "U8", "u8", 1},
    {DType::boolean, "BOOL", "bool", 1},
};
const DTypeInfo& info(DType dt) { return kInfo[static_cast<int>(dt)]; }
}  // namespace

std::string_view safetensors_name(DType dt) { return info(dt).st_name; }
std::string_view short_name(DType dt) { return info(dt).short_name; }
std::size_t element_size(DType dt) { return info(dt).size; }

bool parse_safetensors_name(std::string_view name, DType& out) {
  for (const auto& i : kInfo)
    if (name == i.st_name) { out = i.dt; return true; }
  return false;
}
bool parse_short_name(std::string_view name, DType& out) {
  for (const auto& i : kInfo)
    if (name == i.short_name) { out = i.dt; return true; }
  return false;
}

bool is_floating(DType dt) {
  return dt == DType::f32 || dt == DType::bf16 || dt == DType::f16 || dt == DType::f64;
}
bool is_integer_or_bool(DType dt) { return !is_floating(dt); }

double unit_roundoff(DType dt) {
  switch (dt) {
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::bf16: return std::ldexp(1.0, -8);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::f64: return std::ldexp(1.0, -53);
    default: return 0.0;
  }
}
double max_finite(DType dt) {
  switch (dt) {
    case DType::f32: return std::numeric_limits<float>::max();
    case DType::bf16: return bf16_to_float(0x7f7f);
    case DType::f16: return 65504.0;
    case DType::f64: return std::numeric_limits<double>::max();
    default: return 0.0;
  }
}
double min_subnormal(DType dt) {
  switch (dt) {
    case DType::f32: return std::ldexp(1.0, -149);
    case DType::bf16: return std::ldexp(1.0, -133);
    case DType::f16: return std::ldexp(1.0, -24);
    case DType::f64: return std::numeric_limits<double>::denorm_min();
    default: return 0.0;
  }
}

float bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_bf16(float x) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  // Round to nearest even on the 16 dropped bits; carries into the exponent give ±inf correctly.
  std::uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<std::uint16_t>(u >> 16);
}

float f16_to_float(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  float mag;
  if (exp == 0) {
    mag = std::ldexp(static_cast<float>(mant), -24);  // subnormal (or zero), exact
  } else if (exp == 31) {
    mag = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    mag = std::bit_cast<float>(((exp + 112u) << 23) | (mant << 13));
  }
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(mag) | sign);
}

std::uint16_t float_to_f16(float x) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  float mag = std::bit_cast<float>(a);
  if (a < 0x38800000u) {
    // Below the smallest normal f16 (2^-14): a multiple of 2^-24. Scale so that the rounding
    // to an integer is the float addition's own round-to-nearest-even (exact otherwise).
    float scaled = mag * 16777216.0f;  // * 2^24, exact
    float r = std::nearbyint(scaled);  // default rounding mode: to nearest, ties to even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(r));  // r <= 1024: may become the smallest normal
  }
  // Normal: drop 13 mantissa bits with round to nearest even; the carry may bump the exponent.
  std::uint32_t lsb = (a >> 13) & 1u;
  std::uint32_t rounded = a + 0xfffu + lsb;
  std::uint32_t exp = (rounded >> 23) - 112u;
  std::uint32_t mant = (rounded >> 13) & 0x3ffu;
  return static_cast<std::uint16_t>(sign | (exp << 10) | mant);
}

float round_to_odd_float(double x) {
  if (!std::isfinite(x)) return static_cast<float>(x);
  // Truncate toward zero to float, then set the last bit if inexact.
  float f = static_cast<float>(x);  // round to nearest
  if (static_cast<double>(f) == x) return f;
  if (std::isinf(f) || std::fabs(static_cast<double>(f)) > std::fabs(x)) {
    f = std::nextafter(f, 0.0f);  // now truncated toward zero (may be FLT_MAX)
  }
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  u |= 1u;  // sticky: inexact results land on an odd pattern
  return std::bit_cast<float>(u);
}

std::uint16_t double_to_bf16(double x) { return float_to_bf16(round_to_odd_float(x)); }
std::uint16_t double_to_f16(double x) { return float_to_f16(round_to_odd_float(x)); }

double round_to_dtype(double x, DType dt) {
  switch (dt) {
    case DType::f32: return static_cast<double>(static_cast<float>(x));
    case DType::bf16: return bf16_to_float(double_to_bf16(x));
    case DType::f16: return f16_to_float(double_to_f16(x));
    case DType::f64: return x;
    default: return x;
  }
}

}  // namespace divcheck

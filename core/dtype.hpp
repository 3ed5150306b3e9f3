// Element types of host tensors and exact conversions between them.
//
// bfloat16 and float16 are stored as their 16-bit patterns. Conversions from float or double
// round once, to nearest, ties to even, including subnormals, overflow to ±inf and NaN.
// `round_to_odd_float(double)` is the building block that makes double -> bf16/f16 a single
// rounding: rounding to odd into float (24 bits, >= p+2 bits for both 16-bit formats) and then
// to nearest-even gives the correctly rounded result (Boldo & Melquiond, "When double rounding
// is odd").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace divcheck {

enum class DType : std::uint8_t { f32, bf16, f16, f64, i64, i32, i16, i8, u8, boolean };

// Name in the safetensors header ("F32", "BF16", ...).
std::string_view safetensors_name(DType dt);
// Parse a safetensors dtype name; returns false for unknown names.
bool parse_safetensors_name(std::string_view name, DType& out);
// Short lower-case name for reports and the CLI ("f32", "bf16", "f16", ...).
std::string_view short_name(DType dt);
bool parse_short_name(std::string_view name, DType& out);

std::size_t element_size(DType dt);
bool is_floating(DType dt);
bool is_integer_or_bool(DType dt);

// Unit roundoff of a floating dtype: 2^-24 (f32), 2^-8 (bf16), 2^-11 (f16), 2^-53 (f64).
double unit_roundoff(DType dt);
// Largest finite value of a floating dtype.
double max_finite(DType dt);
// Smallest positive subnormal of a floating dtype.
double min_subnormal(DType dt);

// 16-bit float formats.
float bf16_to_float(std::uint16_t bits);
float f16_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16(float x);  // round to nearest even
std::uint16_t float_to_f16(float x);   // round to nearest even
std::uint16_t double_to_bf16(double x);
std::uint16_t double_to_f16(double x);

// Round a double to float with round-to-odd (sticky last bit). Exact values are unchanged.
float round_to_odd_float(double x);
// Round a double to the nearest value representable in `dt` (a floating dtype), once.
double round_to_dtype(double x, DType dt);

}  // namespace divcheck

// Row access to host tensors for the CPU backend: a contiguous run of a floating tensor read as
// float32 (exact for f32/bf16/f16), a float32 run written back rounded once to the tensor's
// dtype, masks read as booleans, and the gradient tensors a case asks for.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace divcheck::cpu {

// out[i] = t[offset + i] for i < n (t is f32, bf16 or f16).
void load_f32(const Tensor& t, std::int64_t offset, std::int64_t n, float* out);
// t[offset + i] = round_once(in[i]) for i < n.
void store_f32(Tensor& t, std::int64_t offset, std::int64_t n, const float* in);
// Fill t[offset, offset + n) with one float32 value (rounded once).
void fill_f32(Tensor& t, std::int64_t offset, std::int64_t n, float value);

// Validity of positions 0..count-1 of an optional mask (absent = every position valid).
std::vector<std::uint8_t> mask_flags(const Tensor* mask, std::int64_t count);
// Row of a (.., V) support mask as 0/1 bytes.
void load_mask_row(const Tensor& mask, std::int64_t offset, std::int64_t n, std::uint8_t* out);

// Zero-filled (+0) gradient tensors for every wanted role, in the role tensor's dtype/shape.
std::map<std::string, Tensor> zero_gradients(const Case& c);

// The effective reduction (the row's default when the parameter is empty).
std::string effective_reduction(const Case& c);

}  // namespace divcheck::cpu

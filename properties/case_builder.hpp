// Helpers shared by the case generators: building tensors from drawn values, drawing dtypes,
// masks, the upstream gradient and the set of wanted gradients. Functions named draw_* must be
// called inside rc::gen::exec (they use operator* on generators).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "core/case.hpp"

namespace divcheck::pgen {

// A tensor of a floating dtype from exact values (each rounded once to dt).
Tensor float_tensor(DType dt, const Shape& shape, const std::vector<double>& values);
// An integer/bool tensor (masks, labels).
Tensor int_tensor(DType dt, const Shape& shape, const std::vector<std::int64_t>& values);

// Input dtype: f32 mostly, bf16 and f16 sprinkled in (shrinks toward f32); or bf16/f16 only.
rc::Gen<DType> gen_float_dtype();
rc::Gen<DType> gen_narrow_dtype();

// Mask dtype: bool, i64, i32, u8, i8 (shrinks toward bool).
rc::Gen<DType> gen_mask_dtype();

// A position mask of n entries, 0 = masked. `valid_num/valid_den` is the chance of a valid
// entry; non-zero entries are sometimes values other than 1 (any non-zero means valid) where
// the dtype allows. Shrinks toward all-valid.
std::vector<std::int64_t> draw_mask(std::size_t n, DType dt, int valid_num, int valid_den);
// The "valid" value to store for a mask of dtype dt (1 mostly; 2, -1 or 255 sometimes).
std::int64_t draw_valid_value(DType dt);

// How unusual the upstream gradient should be.
enum class GradStyle : std::uint8_t { usual, unusual };
// The upstream gradient for a loss of shape `s` (scalar, (B,) or (N, V)): 1 mostly; random,
// 0, negative; per-element vectors for "none" (with zeros and negatives).
Tensor draw_grad_output(const Shape& s, GradStyle style);

// The wanted gradients: usually every differentiable role, sometimes a single one, and with
// forward_only_too sometimes none (a loss-only case: the logit rows and tvd_prob, whose CUDA
// forward-only launch is a path of its own).
std::vector<std::string> draw_wants(const DivergenceInfo& d, bool forward_only_too = false);

// Count of non-zero entries.
std::int64_t count_valid(const std::vector<std::int64_t>& mask);

}  // namespace divcheck::pgen

// Small valid cases for every registry row, built generically from the row's roles: the shared
// fixture of the validate_case, case-file and fuzz tests. Deterministic in the seed.
#pragma once

#include <cstdint>

#include "core/case.hpp"

namespace divcheck::testing {

struct SampleOptions {
  DType float_dtype = DType::f32;     // dtype of every float role
  DType mask_dtype = DType::i64;      // dtype of masks (any integer or bool dtype)
  DType label_dtype = DType::i64;     // dtype of tvd_prob labels (integer)
  bool with_optional = true;          // include optional roles (masks, support, labels)
  bool random_params = false;         // draw every row parameter from its domain (else defaults)
  bool all_grads = true;              // request every differentiable role (else none)
  // Dimension sizes by symbol.
  std::int64_t B = 2, T = 3, V = 5, N = 4, H = 3, D1 = 2, D2 = 3;
};

// A case that passes validate_case, with random tensor contents and grad_output set.
Case sample_case(DivergenceId id, std::uint64_t seed, const SampleOptions& opt = {});

// Every integer or bool dtype, and the float dtypes roles may have.
inline constexpr DType kMaskDTypes[] = {DType::i64, DType::i32, DType::i16, DType::i8, DType::u8, DType::boolean};
inline constexpr DType kLabelDTypes[] = {DType::i64, DType::i32, DType::i16, DType::i8, DType::u8};
inline constexpr DType kFloatDTypes[] = {DType::f32, DType::bf16, DType::f16};

}  // namespace divcheck::testing

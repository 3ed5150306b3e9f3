// Case builders for the CPU backend's tests: tensors from double values (rounded once to the
// dtype), masks, random logits with a fixed seed, and a small valid case of any registry row.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace divcheck::testing {

// A tensor of dtype dt and shape s from values (each rounded once to dt).
Tensor make_tensor(DType dt, const Shape& s, const std::vector<double>& values);
// A u8 mask (any non-zero = valid).
Tensor make_mask(const Shape& s, const std::vector<int>& values);
Tensor ones_mask(const Shape& s);
// n standard-normal values times scale, deterministic in seed.
std::vector<double> randn(std::size_t n, std::uint64_t seed, double scale = 1.0);
// Row-wise softmax of (rows x cols) values, in double.
std::vector<double> softmax_rows(const std::vector<double>& z, std::int64_t rows, std::int64_t cols);

// Role names of the p-side and q-side logits of a logit-level row.
std::string p_role(DivergenceId id);
std::string q_role(DivergenceId id);
// The (B, T) position-mask role of a row ("" when it has none).
std::string mask_role(DivergenceId id);
bool is_logit_row(DivergenceId id);
std::vector<DivergenceId> logit_rows();
std::vector<DivergenceId> all_rows();

// A logit-level case: p-side and q-side logits (B*T*V values each) in dtype dt; the required
// position mask (if any) all ones; parameters at their defaults (temperature rows: T = 1).
Case logit_case(DivergenceId id, std::int64_t B, std::int64_t T, std::int64_t V, DType dt,
                const std::vector<double>& p_side, const std::vector<double>& q_side);

// Request every differentiable gradient of the present roles, with upstream gradient g
// (filled into the loss shape).
void want_all_grads(Case& c, double g = 1.0);

// The options a random logit case varies by seed: a random support mask (for the support rows,
// drawn from rng), temperature 0.7 for the temperature rows, the cap on odd seeds (cross-entropy),
// log_target on even seeds, reduction "none" on every third seed where the row has it.
void vary_logit_options(Case& c, std::int64_t B, std::int64_t T, std::int64_t V, std::uint64_t seed,
                        std::mt19937_64& rng);

// A small, valid, finite case of any row with random inputs (masks with some zeros where the
// row has a mask, a support mask for the support rows, non-default parameters).
Case random_case(DivergenceId id, DType dt, std::uint64_t seed);

}  // namespace divcheck::testing

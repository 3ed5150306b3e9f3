// Small tensor transforms the metamorphic properties need: permuting one axis, gathering and
// scattering rows, quantizing a group of values onto a grid on which an exact shift exists.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.hpp"
#include "properties/verdict.hpp"

namespace divcheck::props {

// out[..., perm[j], ...] = t[..., j, ...] along `axis` (perm maps old index -> new index).
Tensor permute_axis(const Tensor& t, std::size_t axis, const std::vector<std::int64_t>& perm);
// The same permutation applied to a flat per-element vector laid out like a tensor of `shape`.
std::vector<double> permute_axis(const std::vector<double>& v, const Shape& shape, std::size_t axis,
                                 const std::vector<std::int64_t>& perm);

// A permutation of n drawn from a seed (Fisher-Yates with a fixed RNG).
std::vector<std::int64_t> permutation_from_seed(std::int64_t n, std::uint64_t seed);

// Significand bits of a float dtype: 24 (f32), 8 (bf16), 11 (f16).
int precision_bits(DType dt);

// Exact shifts. For a group of values of dtype dt (indices `idx` into `values`), quantizes them
// to multiples of Q = 2^k chosen so that every |x| <= 2^(p-2) Q, and returns Q. After that,
// x + j Q is exact in dt for every |j| <= 2^(p-2) (as long as it does not overflow). NaN and
// +-inf are left alone. min_q (rounded up to a power of two) coarsens the grid, so that shifts
// up to 2^(p-2) min_q are exact: large absolute offsets at the price of fewer distinct values.
double quantize_group(std::vector<double>& values, const std::vector<std::size_t>& idx, DType dt, double min_q = 0.0);

// Element-wise sum of two bound vectors, and a vector scaled.
std::vector<double> add_bounds(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace divcheck::props

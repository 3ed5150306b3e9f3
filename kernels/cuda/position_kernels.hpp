// The small kernels around the row kernels: valid-position counts, the per-sequence gradient
// coefficient w g / T, and the deterministic loss reductions over positions (logit rows) and
// over rows (tvd_prob). Integer counts are exact in any order; every float sum over positions
// is sequential in index order, exactly as the CPU backend (kernels/cpu/reduction.cpp,
// kernels/cpu/tvd_prob.cpp): no float atomics, bitwise reproducible.
// Cost: the sequential sums run in one thread over shared-memory staged chunks of 1024
// positions, a few cycles per position (about 20 us for 10^4 positions).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/cuda/device_api.hpp"

namespace divcheck::cuda {

// counts[b] = number of valid positions of sequence b (valid == nullptr: T); total = sum.
void launch_count_valid(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq, long long* counts,
                        long long* total, cudaStream_t stream);

// coef[b] = (float)(w_b * g_b * inv_temperature) with w of docs/semantics.md, formed in double
// in the CPU backend's operation order (kernels/cpu/reduction.cpp PositionReduction::coef).
void launch_position_weights(std::int64_t batch, PositionReduction reduction, const float* grad_output,
                             double inv_temperature, const long long* counts, const long long* total, float* coef,
                             cudaStream_t stream);

// loss = the reduction of row_loss over the valid positions (scalar, or (B,) for none).
void launch_reduce_positions(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq,
                             PositionReduction reduction, const float* row_loss, float* loss, cudaStream_t stream);

// tvd_prob: n_valid, scale (double) and half_scale_g = (float)(0.5 * scale * g) on the device.
void launch_tvd_scale(const std::uint8_t* valid, std::int64_t rows, std::int64_t vocab, TvdReduction reduction,
                      const float* grad_output, long long* total, double* scale, float* half_scale_g,
                      cudaStream_t stream);

// tvd_prob loss (not "none"): (float)((double)(sequential sum of row_value over valid rows) * scale).
void launch_tvd_total(const std::uint8_t* valid, std::int64_t rows, const float* row_value, const double* scale,
                      float* loss, cudaStream_t stream);

}  // namespace divcheck::cuda

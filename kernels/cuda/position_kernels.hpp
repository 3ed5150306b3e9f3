// The small kernels around the row kernels: valid-position counts, the per-sequence gradient
// coefficient w g / T, and the deterministic loss reductions over positions (logit rows) and
// over rows (tvd_prob). Integer counts are exact in any order; every float sum over positions,
// sequences or rows is in the lane order of kernels/math/reduction_order.hpp (depth
// ceil(n/1024) + 10 <= sigma(n)), exactly as the CPU backend (kernels/cpu/reduction.cpp,
// kernels/cpu/tvd_prob.cpp): no float atomics, bitwise reproducible. One warp per sum
// (lane_order_sum.cuh): a few microseconds for 10^4 positions. (Until 2026-12-02 these sums were
// sequential in one thread: ~0.3 ms of a KL launch at 8192 positions with sequence_mean, and a
// depth of n - 1, beyond sigma(n): bench/RESULTS.md step 39.)
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

// loss = the reduction of row_loss over the valid positions (scalar, or (B,) for none):
// token_mean one warp over the B*T positions; sequence_mean and sequence_none a warp per
// sequence (s_b into seq_loss, B floats of workspace, or into loss for none), then for
// sequence_mean one warp over the s_b.
void launch_reduce_positions(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq,
                             PositionReduction reduction, const float* row_loss, float* seq_loss, float* loss,
                             cudaStream_t stream);

// tvd_prob: n_valid, scale (double) and half_scale_g = (float)(0.5 * scale * g) on the device.
void launch_tvd_scale(const std::uint8_t* valid, std::int64_t rows, std::int64_t vocab, TvdReduction reduction,
                      const float* grad_output, long long* total, double* scale, float* half_scale_g,
                      cudaStream_t stream);

// tvd_prob loss (not "none"): (float)((double)(lane-order sum of row_value over valid rows) * scale).
void launch_tvd_total(const std::uint8_t* valid, std::int64_t rows, const float* row_value, const double* scale,
                      float* loss, cudaStream_t stream);

}  // namespace divcheck::cuda

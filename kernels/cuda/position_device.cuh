// The device code of the small kernels around the row kernels (launchers and documentation
// in position_kernels.hpp): valid counts, per-sequence coefficients, the loss reductions (in the
// lane order of kernels/math/reduction_order.hpp, one warp per sum: lane_order_sum.cuh).
// The kernels are static: each translation unit that launches them has its own (only
// position_kernels.cu in the library).
#pragma once

#include <cstdint>

#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/lane_order_sum.cuh"

namespace divcheck::cuda {

inline constexpr int kCountThreads = 256;
inline constexpr int kStageThreads = 1024;

// Sum of one value per thread of the block (integers: exact). Result valid in thread 0.
__device__ inline long long block_sum(long long v) {
  __shared__ long long part[32];
  for (int offset = 16; offset >= 1; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>((blockDim.x + 31) / 32) ? part[lane] : 0;
    for (int offset = 16; offset >= 1; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  __syncthreads();  // part[] may be reused by the next call
  return v;
}

static __global__ void __launch_bounds__(kCountThreads)
    count_valid_kernel(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq, long long* counts) {
  for (std::int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    long long n = 0;
    if (valid == nullptr) {
      n = threadIdx.x == 0 ? seq : 0;
    } else {
      for (std::int64_t t = threadIdx.x; t < seq; t += blockDim.x) n += valid[b * seq + t] != 0 ? 1 : 0;
    }
    n = block_sum(n);
    if (threadIdx.x == 0) counts[b] = n;
  }
}

static __global__ void __launch_bounds__(kStageThreads)
    total_kernel(const long long* counts, std::int64_t batch, long long* total) {
  long long n = 0;
  for (std::int64_t b = threadIdx.x; b < batch; b += blockDim.x) n += counts[b];
  n = block_sum(n);
  if (threadIdx.x == 0) *total = n;
}

static __global__ void __launch_bounds__(kCountThreads)
    weights_kernel(std::int64_t batch, PositionReduction reduction, const float* g, double inv_temperature,
                   const long long* counts, const long long* total, float* coef) {
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const double n_b = static_cast<double>(counts[b]);
  double w = 0.0;
  switch (reduction) {
    case PositionReduction::sequence_mean:
      w = 1.0 / (static_cast<double>(batch) * n_b) * static_cast<double>(g[0]);
      break;
    case PositionReduction::sequence_none:
      w = 1.0 / n_b * static_cast<double>(g[b]);
      break;
    case PositionReduction::token_mean:
      w = 1.0 / static_cast<double>(*total) * static_cast<double>(g[0]);
      break;
  }
  coef[b] = static_cast<float>(w * inv_temperature);  // used only at valid positions (n_b >= 1)
}

// s_b of every sequence, one warp per sequence b: n_b = its valid positions, s_b = (the sum of
// its valid positions' row losses in the lane order of reduction_order.hpp, masked positions
// +0) / n_b, or 0 when n_b = 0 (a fully masked sequence contributes exactly 0). Masked row losses
// are never used (the row kernel does not write them). out: (B).
static __global__ void __launch_bounds__(kCountThreads)
    sequence_losses_kernel(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq, const float* row_loss,
                           float* out) {
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t b = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; b < batch;
       b += warps) {  // (warp-uniform)
    const std::uint8_t* v = valid ? valid + b * seq : nullptr;
    const float* ell = row_loss + b * seq;
    auto ok = [&](std::int64_t t) { return v == nullptr || v[t] != 0; };
    const long long n = warp_count(seq, ok);
    const float sum = warp_lane_order_sum(seq, [&](std::int64_t t) { return ok(t) ? ell[t] : 0.0f; });
    if ((threadIdx.x & 31u) == 0) out[b] = n == 0 ? 0.0f : sum / static_cast<float>(n);
  }
}

// loss[0] = (the sum of the valid values in the lane order, masked ones +0) / (their count), or
// 0 when none is valid; one warp. token_mean: the row losses of all B*T positions under the mask;
// sequence_mean: the B values s_b, every one counted (valid = nullptr).
static __global__ void __launch_bounds__(32)
    mean_kernel(const std::uint8_t* valid, std::int64_t n, const float* values, float* loss) {
  auto ok = [&](std::int64_t i) { return valid == nullptr || valid[i] != 0; };
  const long long count = warp_count(n, ok);
  const float sum = warp_lane_order_sum(n, [&](std::int64_t i) { return ok(i) ? values[i] : 0.0f; });
  if (threadIdx.x == 0) loss[0] = count == 0 ? 0.0f : sum / static_cast<float>(count);
}

static __global__ void __launch_bounds__(kStageThreads)
    tvd_scale_kernel(const std::uint8_t* valid, std::int64_t rows, std::int64_t vocab, TvdReduction reduction,
                     const float* g, long long* total, double* scale, float* half_scale_g) {
  long long n = 0;
  if (valid == nullptr)
    n = threadIdx.x == 0 ? rows : 0;
  else
    for (std::int64_t i = threadIdx.x; i < rows; i += blockDim.x) n += valid[i] != 0 ? 1 : 0;
  n = block_sum(n);
  if (threadIdx.x != 0) return;
  double s = 1.0;  // sum and none
  if (reduction == TvdReduction::batchmean) s = n != 0 ? 1.0 / static_cast<double>(n) : 0.0;
  if (reduction == TvdReduction::mean) s = n != 0 ? 1.0 / (static_cast<double>(n) * static_cast<double>(vocab)) : 0.0;
  *total = n;
  *scale = s;
  *half_scale_g = (g != nullptr && reduction != TvdReduction::none)
                      ? static_cast<float>(0.5 * s * static_cast<double>(g[0]))
                      : 0.0f;
}

// tvd_prob: loss = (float)(scale * the sum of the valid rows' values in the lane order), or 0
// without a valid row; one warp.
static __global__ void __launch_bounds__(32)
    tvd_total_kernel(const std::uint8_t* valid, std::int64_t rows, const float* row_value, const double* scale,
                     float* loss) {
  auto ok = [&](std::int64_t i) { return valid == nullptr || valid[i] != 0; };
  const long long n = warp_count(rows, ok);
  const float total = warp_lane_order_sum(rows, [&](std::int64_t i) { return ok(i) ? row_value[i] : 0.0f; });
  if (threadIdx.x == 0) loss[0] = n == 0 ? 0.0f : static_cast<float>(static_cast<double>(total) * *scale);
}

}  // namespace divcheck::cuda

// The device code of the small kernels around the row kernels (launchers and documentation
// in position_kernels.hpp): valid counts, per-sequence coefficients, sequential reductions.
// The kernels are static: each translation unit that launches them has its own (only
// position_kernels.cu in the library).
#pragma once

#include <cstdint>

#include "kernels/cuda/device_types.hpp"

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

// Thread 0 visits i = 0 .. n-1 in increasing order with (valid_i, value_i); the whole block
// (kStageThreads threads) stages each chunk of values and flags in shared memory first.
template <class Visit>
__device__ void sequential_visit(std::int64_t n, const std::uint8_t* valid, const float* values, Visit&& visit) {
  __shared__ float vals[kStageThreads];
  __shared__ unsigned char oks[kStageThreads];
  for (std::int64_t base = 0; base < n; base += kStageThreads) {
    const std::int64_t i = base + threadIdx.x;
    if (i < n) {
      const bool ok = valid == nullptr || valid[i] != 0;
      oks[threadIdx.x] = ok ? 1 : 0;
      vals[threadIdx.x] = ok ? values[i] : 0.0f;  // masked entries are never read
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const int m = static_cast<int>(n - base < kStageThreads ? n - base : kStageThreads);
      for (int k = 0; k < m; ++k) visit(base + k, oks[k] != 0, vals[k]);
    }
    __syncthreads();
  }
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

static __global__ void __launch_bounds__(kStageThreads)
    reduce_positions_kernel(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq,
                            PositionReduction reduction, const float* row_loss, float* loss) {
  // Thread 0's running state: the sum of the current sequence (or of everything for
  // token_mean), its valid count, the position inside the sequence, the sum of the s_b.
  float sum = 0.0f, grand = 0.0f;
  long long count = 0, all = 0;
  std::int64_t t = 0, b = 0;
  const bool token = reduction == PositionReduction::token_mean;
  sequential_visit(batch * seq, valid, row_loss, [&](std::int64_t, bool ok, float ell) {
    if (ok) {
      sum = sum + ell;
      ++count;
      ++all;
    }
    if (token) return;
    if (++t == seq) {  // end of sequence b: s_b = sum / n_b, or 0 when nothing is valid
      const float s_b = count == 0 ? 0.0f : sum / static_cast<float>(count);
      if (reduction == PositionReduction::sequence_none)
        loss[b] = s_b;
      else
        grand = grand + s_b;
      sum = 0.0f;
      count = 0;
      t = 0;
      ++b;
    }
  });
  if (threadIdx.x != 0) return;
  if (token)
    loss[0] = all == 0 ? 0.0f : sum / static_cast<float>(all);
  else if (reduction == PositionReduction::sequence_mean)
    loss[0] = grand / static_cast<float>(batch);
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

static __global__ void __launch_bounds__(kStageThreads)
    tvd_total_kernel(const std::uint8_t* valid, std::int64_t rows, const float* row_value, const double* scale,
                     float* loss) {
  float total = 0.0f;
  long long n = 0;
  sequential_visit(rows, valid, row_value, [&](std::int64_t, bool ok, float v) {
    if (!ok) return;
    total = total + v;
    ++n;
  });
  if (threadIdx.x == 0) loss[0] = n == 0 ? 0.0f : static_cast<float>(static_cast<double>(total) * *scale);
}

}  // namespace divcheck::cuda

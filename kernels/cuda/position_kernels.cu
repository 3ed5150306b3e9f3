// The small kernels of position_kernels.hpp: counts, coefficients, loss reductions.
#include "kernels/cuda/position_kernels.hpp"

#include <algorithm>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/position_device.cuh"

namespace divcheck::cuda {

namespace {

unsigned grid_for(std::int64_t items, std::int64_t per_block, std::int64_t cap) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(cap, (items + per_block - 1) / per_block)));
}

}  // namespace

void launch_count_valid(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq, long long* counts,
                        long long* total, cudaStream_t stream) {
  count_valid_kernel<<<grid_for(batch, 1, 65535), kCountThreads, 0, stream>>>(valid, batch, seq, counts);
  check_launch("count_valid_kernel");
  total_kernel<<<1, kStageThreads, 0, stream>>>(counts, batch, total);
  check_launch("total_kernel");
}

void launch_position_weights(std::int64_t batch, PositionReduction reduction, const float* grad_output,
                             double inv_temperature, const long long* counts, const long long* total, float* coef,
                             cudaStream_t stream) {
  weights_kernel<<<grid_for(batch, kCountThreads, 0x7fffffff), kCountThreads, 0, stream>>>(
      batch, reduction, grad_output, inv_temperature, counts, total, coef);
  check_launch("weights_kernel");
}

void launch_reduce_positions(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq,
                             PositionReduction reduction, const float* row_loss, float* seq_loss, float* loss,
                             cudaStream_t stream) {
  if (reduction == PositionReduction::token_mean) {
    mean_kernel<<<1, 32, 0, stream>>>(valid, batch * seq, row_loss, loss);
    check_launch("mean_kernel");
    return;
  }
  float* s = reduction == PositionReduction::sequence_none ? loss : seq_loss;
  sequence_losses_kernel<<<grid_for(batch, kCountThreads / 32, 65535), kCountThreads, 0, stream>>>(valid, batch, seq,
                                                                                                 row_loss, s);
  check_launch("sequence_losses_kernel");
  if (reduction == PositionReduction::sequence_mean) {
    mean_kernel<<<1, 32, 0, stream>>>(nullptr, batch, seq_loss, loss);
    check_launch("mean_kernel");
  }
}

void launch_tvd_scale(const std::uint8_t* valid, std::int64_t rows, std::int64_t vocab, TvdReduction reduction,
                      const float* grad_output, long long* total, double* scale, float* half_scale_g,
                      cudaStream_t stream) {
  tvd_scale_kernel<<<1, kStageThreads, 0, stream>>>(valid, rows, vocab, reduction, grad_output, total, scale,
                                                    half_scale_g);
  check_launch("tvd_scale_kernel");
}

void launch_tvd_total(const std::uint8_t* valid, std::int64_t rows, const float* row_value, const double* scale,
                      float* loss, cudaStream_t stream) {
  tvd_total_kernel<<<1, 32, 0, stream>>>(valid, rows, row_value, scale, loss);
  check_launch("tvd_total_kernel");
}

}  // namespace divcheck::cuda

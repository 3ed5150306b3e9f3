// A Backend that runs the CUDA backend's kernels (kernels/cuda/*.cuh, unchanged) in the host
// emulator of emulator.hpp: the kernel logic checked on machines without a GPU. The plan is
// the one the options force (cluster_ctas 0 means 1: there is no device to plan for); a slice
// is staged when it fits the H100/H200 shared-memory budget and staging is allowed.
// Elementary functions are the host's (the CPU backend's), so with one CTA per row the results
// must be bitwise equal to the CPU backend's.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/device_types.hpp"

namespace divcheck::gputest {

std::unique_ptr<Backend> make_emulated_cuda_backend(const cuda::CudaOptions& options);

// The CUDA backend's launch_reduce_positions (kernels/cuda/position_kernels.cu) run by the
// emulator on host buffers: row_loss (B*T; masked entries never read), seq_loss (B floats of
// workspace), loss (1 float, or B for sequence_none).
void emulate_reduce_positions(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq,
                              cuda::PositionReduction reduction, const float* row_loss, float* seq_loss, float* loss);

}  // namespace divcheck::gputest

// The device-level API of the CUDA backend: device pointers, sizes, dtype, parameters and a
// stream in; the loss and the requested gradients written to device memory. Everything the
// Backend (cuda_backend.cpp) and the benchmarks (bench/) launch goes through these functions.
//
// Semantics are docs/semantics.md's, exactly as the CPU backend computes them:
//   * the ten rows = six row kernels (KL, Jefferys, cross-entropy, JS, Hellinger, TV) with
//     options (support mask, probability path, cap, temperature), plus tvd_prob;
//   * a position whose valid flag is 0 is inert: its logits are never read and its gradient
//     rows are written as exact +0;
//   * gradients are written once, w g / T folded in, rounded once into the input dtype.
// Masks reach the device as 0/1 bytes (the caller converts any integer/bool dtype).
// Every function checks its CUDA calls and throws divcheck::Unavailable with the CUDA error
// name and string; bad arguments throw divcheck::InvalidArgument naming the argument.
// The types are in device_types.hpp. Plain C++17 (compiled by nvcc and by g++).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/cuda/device_types.hpp"

namespace divcheck::cuda {

std::size_t logit_workspace_bytes(std::int64_t batch, std::int64_t seq);

// The plan launch_logit_divergence would use (sizes, dtype, support and tuning fields of `a`
// are read; its pointers need not be set, except `support` != nullptr when there is one).
LogitPlan plan_logit_divergence(const LogitArgs& a);

// Enqueues the whole computation on `stream` (no host synchronisation). Returns the plan used.
LogitPlan launch_logit_divergence(const LogitArgs& a, cudaStream_t stream);

std::size_t tvd_prob_workspace_bytes(std::int64_t rows);
void launch_tvd_prob(const TvdProbArgs& a, cudaStream_t stream);

}  // namespace divcheck::cuda

// Checking CUDA runtime calls on the host: a failed call becomes divcheck::Unavailable with
// what was attempted, the CUDA error name and its description. Never a crash, never ignored.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "core/errors.hpp"

namespace divcheck::cuda {

inline void cuda_check(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return;
  throw Unavailable("cuda backend: " + what + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

// After a kernel launch: the launch error (bad configuration, too many resources).
inline void check_launch(const std::string& kernel) { cuda_check(cudaGetLastError(), "launch of " + kernel); }

}  // namespace divcheck::cuda

// Deterministic benchmark inputs generated on the device (GB-sized tensors never cross PCIe):
// values lo + (hi - lo) u with u from a counter-based hash of (seed, index), rounded once to
// the element type.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/cuda/device_types.hpp"

namespace divcheck::bench {

void fill_uniform(void* dst, cuda::FloatKind kind, std::int64_t n, std::uint64_t seed, float lo, float hi,
                  cudaStream_t stream);

}  // namespace divcheck::bench

// Deterministic benchmark inputs generated on the device (see device_data.hpp).
#include "bench/device_data.hpp"

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/element_io.cuh"

namespace divcheck::bench {

namespace {

__device__ std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <class Elem>
__global__ void fill_kernel(Elem* dst, std::int64_t n, std::uint64_t seed, float lo, float hi) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float u = static_cast<float>(mix(seed ^ static_cast<std::uint64_t>(i)) >> 40) * 0x1p-24f;
    cuda::store_float(dst + i, lo + (hi - lo) * u);
  }
}

}  // namespace

void fill_uniform(void* dst, cuda::FloatKind kind, std::int64_t n, std::uint64_t seed, float lo, float hi,
                  cudaStream_t stream) {
  constexpr unsigned kBlocks = 4096, kThreadsPerBlock = 256;
  switch (kind) {
    case cuda::FloatKind::f32:
      fill_kernel<<<kBlocks, kThreadsPerBlock, 0, stream>>>(static_cast<float*>(dst), n, seed, lo, hi);
      break;
    case cuda::FloatKind::bf16:
      fill_kernel<<<kBlocks, kThreadsPerBlock, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), n, seed, lo, hi);
      break;
    case cuda::FloatKind::f16:
      fill_kernel<<<kBlocks, kThreadsPerBlock, 0, stream>>>(static_cast<__half*>(dst), n, seed, lo, hi);
      break;
  }
  cuda::check_launch("fill_kernel");
}

}  // namespace divcheck::bench

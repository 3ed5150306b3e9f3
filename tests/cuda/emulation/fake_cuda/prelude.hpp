// Force-included (-include) into the translation units of the kernel emulator: makes the CUDA
// kernels' device code (kernels/cuda/*.cuh) compile as host C++. CUDA keywords become empty
// macros; __shared__ becomes `static`, which is right because the emulator runs one CTA at a
// time for every kernel with function-scope shared memory (the cluster kernel gets its shared
// memory passed in explicitly); the builtin variables and the warp and block intrinsics are
// answered by the emulator's per-thread context (emulator.hpp).
#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>
#include <atomic>
#include <cstring>

#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static

struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return uint4{x, y, z, w}; }
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

namespace emu {
const dim3& thread_idx();
const dim3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
void sync_block();
// Every lane of the calling warp publishes `value`; returns lane `src`'s value (all 32 lanes
// must call it, as a full-mask CUDA shuffle requires).
unsigned long long warp_exchange(unsigned long long value, int src);
// Every lane of the calling warp publishes `pred`; returns 1 when any lane's is non-zero.
int warp_any(int pred);
}  // namespace emu

#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::block_idx())
#define blockDim (::emu::block_dim())
#define gridDim (::emu::grid_dim())

inline void __syncthreads() { ::emu::sync_block(); }

namespace emu {
template <class T>
unsigned long long to_bits(T v) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 64 bits");
  unsigned long long b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(unsigned long long b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
}  // namespace emu

template <class T>
T __shfl_down_sync(unsigned, T v, int offset) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int src = lane + offset < 32 ? lane + offset : lane;  // out of range: the lane's own value
  return emu::from_bits<T>(emu::warp_exchange(emu::to_bits(v), src));
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  return emu::from_bits<T>(emu::warp_exchange(emu::to_bits(v), lane ^ mask));
}
inline int __any_sync(unsigned, int pred) { return emu::warp_any(pred); }
inline float __int_as_float(int i) { return emu::from_bits<float>(static_cast<unsigned int>(i)); }
inline float __uint_as_float(unsigned int i) { return emu::from_bits<float>(i); }
inline unsigned int __float_as_uint(float f) { return static_cast<unsigned int>(emu::to_bits(f)); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}
template <class T>
T __ldg(const T* p) {
  return *p;
}
template <class T>
void __stcs(T* p, T v) {
  *p = v;
}
// An L2 load (ld.global.cg) of data other CTAs wrote during the launch: here an acquire load of
// the words, so that the emulator's threads see one another's stores (stream_grad_rows_kernel.cuh).
template <class T>
T __ldcg(const T* p) {
  T v;
  std::atomic_thread_fence(std::memory_order_acquire);
  std::memcpy(&v, p, sizeof(T));
  return v;
}

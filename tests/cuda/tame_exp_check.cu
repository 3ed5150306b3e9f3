// Exhaustive device check of the tame exponential range (tame_exp_check.hpp).
#include "tests/cuda/tame_exp_check.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

#include "kernels/math/hd.hpp"

namespace divcheck::gputest {
namespace {

struct Counters {
  unsigned long long mismatches, subnormal;
  unsigned int first_bits;
};

// Thread i checks the float with bits 0x80000000 + i (the negative floats from -0 downwards).
__global__ void compare_exponentials(unsigned int count, Counters* out) {
  const unsigned int stride = gridDim.x * blockDim.x;
  unsigned long long bad = 0, sub = 0;
  unsigned int first = 0xffffffffu;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float x = __uint_as_float(0x80000000u + i);
    const float a = math::f_softmax_exp(x), b = math::f_softmax_exp_ftz(x);
    if (__float_as_uint(a) != __float_as_uint(b)) {
      ++bad;
      first = min(first, i);
    }
    if (a < 1.17549435e-38f) ++sub;
  }
  if (bad) {
    atomicAdd(&out->mismatches, bad);
    atomicMin(&out->first_bits, first);
  }
  if (sub) atomicAdd(&out->subnormal, sub);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

TameExpCheck check_tame_exponentials() {
  unsigned int lowest_bits;
  std::memcpy(&lowest_bits, &kTameExpLowest, sizeof lowest_bits);
  const unsigned int count = lowest_bits - 0x80000000u + 1;  // -0 ... kTameExpLowest
  Counters* d = nullptr;
  check(cudaMalloc(&d, sizeof(Counters)), "cudaMalloc");
  const Counters init{0, 0, 0xffffffffu};
  check(cudaMemcpy(d, &init, sizeof init, cudaMemcpyHostToDevice), "cudaMemcpy");
  compare_exponentials<<<1024, 256>>>(count, d);
  check(cudaGetLastError(), "compare_exponentials launch");
  Counters h{};
  check(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy back");
  check(cudaFree(d), "cudaFree");
  TameExpCheck r;
  r.tested = count;
  r.mismatches = h.mismatches;
  r.subnormal = h.subnormal;
  if (h.mismatches) {
    const unsigned int bits = 0x80000000u + h.first_bits;
    std::memcpy(&r.first_mismatch, &bits, sizeof bits);
  }
  return r;
}

}  // namespace divcheck::gputest

// Exhaustive device checks of the tame exponential range, of the power-of-two temperature and of
// the probability path's log (tame_exp_check.hpp).
#include "tests/cuda/tame_exp_check.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

#include "kernels/math/hd.hpp"
#include "kernels/math/softmax.hpp"

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

// Device counters set to `init`, launch(device pointer) (one kernel launch, named `what` in
// errors), the counters back on the host.
template <class C, class Launch>
C run_with_counters(const C& init, const char* what, const Launch& launch) {
  C* d = nullptr;
  check(cudaMalloc(&d, sizeof(C)), "cudaMalloc");
  check(cudaMemcpy(d, &init, sizeof init, cudaMemcpyHostToDevice), "cudaMemcpy");
  launch(d);
  check(cudaGetLastError(), what);
  C h{};
  check(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy back");
  check(cudaFree(d), "cudaFree");
  return h;
}

}  // namespace

TameExpCheck check_tame_exponentials() {
  unsigned int lowest_bits;
  std::memcpy(&lowest_bits, &kTameExpLowest, sizeof lowest_bits);
  const unsigned int count = lowest_bits - 0x80000000u + 1;  // -0 ... kTameExpLowest
  const Counters h = run_with_counters(Counters{0, 0, 0xffffffffu}, "compare_exponentials launch",
                                       [&](Counters* d) { compare_exponentials<<<1024, 256>>>(count, d); });
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

namespace {

// Thread i checks the float d with bits i for every k of the list: the device's IEEE division
// d / 2^k against the product d 2^-k that math::PowerOfTwoTemperature computes.
__global__ void compare_power_of_two_divisions(const int* ks, int nk, Counters* out) {
  const unsigned int stride = gridDim.x * blockDim.x;
  unsigned long long bad = 0;
  unsigned int first = 0xffffffffu;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;; i += stride) {
    const float d = __uint_as_float(i);
    for (int j = 0; j < nk; ++j) {
      const float t = ldexpf(1.0f, ks[j]);
      math::PowerOfTwoTemperature p{};
      math::power_of_two_temperature(t, p);
      const float a = math::divide_by_temperature(d, t), b = math::divide_by_temperature(d, p);
      const bool same = __float_as_uint(a) == __float_as_uint(b) || (a != a && b != b);
      if (!same) {
        ++bad;
        first = min(first, i);
      }
    }
    if (i > 0xffffffffu - stride) break;  // the last lap (no wrap-around)
  }
  if (bad) {
    atomicAdd(&out->mismatches, bad);
    atomicMin(&out->first_bits, first);
  }
}

}  // namespace

PowerOfTwoDivisionCheck check_power_of_two_divisions() {
  const int ks[] = {1, 2, -1, -2, 5, -7, 30, -30, 126, -126};
  PowerOfTwoDivisionCheck r;
  r.ks = sizeof ks / sizeof ks[0];
  int* dk = nullptr;
  check(cudaMalloc(&dk, sizeof ks), "cudaMalloc");
  check(cudaMemcpy(dk, ks, sizeof ks, cudaMemcpyHostToDevice), "cudaMemcpy");
  const Counters h = run_with_counters(Counters{0, 0, 0xffffffffu}, "compare_power_of_two_divisions launch",
                                       [&](Counters* d) {
                                         compare_power_of_two_divisions<<<1024, 256>>>(dk, r.ks, d);  // 2^14 laps
                                       });
  check(cudaFree(dk), "cudaFree");
  r.tested = (std::uint64_t{1} << 32) * static_cast<std::uint64_t>(r.ks);
  r.mismatches = h.mismatches;
  if (h.mismatches) std::memcpy(&r.first_mismatch, &h.first_bits, sizeof h.first_bits);
  return r;
}

namespace {

struct LogCounters {
  unsigned long long non_finite;
  unsigned int near_one_bits, relative_bits;  // max of non-negative floats, compared as bits
  float at_one, at_two;
};

// Thread i checks the float with bits 0x00800000 + i (FLT_MIN upwards to 2).
__global__ void measure_fast_logs(unsigned int count, LogCounters* out) {
  const unsigned int stride = gridDim.x * blockDim.x;
  unsigned long long bad = 0;
  float near = 0.0f, rel = 0.0f;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float p = __uint_as_float(0x00800000u + i);
    const float l = math::f_fast_log(p);
    if (!(l > -1e30f && l < 1e30f)) {
      ++bad;
      continue;
    }
    const double exact = log(static_cast<double>(p));
    const double err = fabs(static_cast<double>(l) - exact) * 16777216.0;  // units of u = 2^-24
    if (p >= 0.5f) near = fmaxf(near, static_cast<float>(err));  // (ln x = 0 at x = 1)
    else rel = fmaxf(rel, static_cast<float>(err / fabs(exact)));
  }
  if (bad) atomicAdd(&out->non_finite, bad);
  atomicMax(&out->near_one_bits, __float_as_uint(near));
  atomicMax(&out->relative_bits, __float_as_uint(rel));
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    out->at_one = math::f_fast_log(1.0f);
    out->at_two = math::f_fast_log(2.0f);
  }
}

}  // namespace

FastLogCheck check_fast_logs() {
  const unsigned int count = 0x40000000u - 0x00800000u + 1;  // FLT_MIN ... 2
  const LogCounters h = run_with_counters(LogCounters{0, 0, 0, -1.0f, -1.0f}, "measure_fast_logs launch",
                                          [&](LogCounters* d) { measure_fast_logs<<<1024, 256>>>(count, d); });
  FastLogCheck r;
  r.tested = count;
  r.non_finite = h.non_finite;
  float near = 0.0f, rel = 0.0f;
  std::memcpy(&near, &h.near_one_bits, sizeof near);
  std::memcpy(&rel, &h.relative_bits, sizeof rel);
  r.near_one = near;
  r.relative = rel;
  unsigned int one_bits = 0;
  std::memcpy(&one_bits, &h.at_one, sizeof one_bits);
  r.one_is_zero = one_bits == 0u;
  r.two_is_ln2 = h.at_two == math::kLn2;
  return r;
}

}  // namespace divcheck::gputest

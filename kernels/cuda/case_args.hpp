// From a validated host Case to the arguments of the device-level API (device_types.hpp): the
// launch parameters that follow from the case alone (row kernel, dtype, sizes, reduction,
// temperature, log_target path, cap, tuning) and the masks as 0/1 bytes. Device pointers are
// left for the caller (the CUDA backend; the kernel emulator of tests/cuda/emulation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/device_types.hpp"

namespace divcheck::cuda {

// The tensors of a logit-row case by their part in the computation.
struct LogitRoles {
  const Tensor* p = nullptr;        // p side: target / clean / teacher
  const Tensor* q = nullptr;        // q side: input / noisy / student
  const Tensor* mask = nullptr;     // (B, T), absent = every position valid
  const Tensor* support = nullptr;  // (B, T, V), absent = full support
  std::string p_name, q_name;
};
LogitRoles logit_roles(const Case& c);

LogitArgs logit_args_of(const Case& c, const CudaOptions& options);  // pointers unset
// The row kernel of a logit-level registry row (throws Unavailable for the others).
LogitKind logit_kind_of(DivergenceId id);
// A logit row at its registry defaults (log_target, no cap, default reduction, T = 1) for a
// (B, T, V) problem of dtype dt; pointers unset. For benchmarks.
LogitArgs logit_args_defaults(DivergenceId id, FloatKind dt, std::int64_t batch, std::int64_t seq, std::int64_t vocab);
TvdProbArgs tvd_args_of(const Case& c);                               // pointers unset

// Non-zero entries of a mask of any dtype as 0/1 bytes.
std::vector<std::uint8_t> nonzero_flags(const Tensor& mask);
// tvd_prob rows whose label is not ignore_index (the CPU backend's test); empty without labels.
std::vector<std::uint8_t> tvd_valid_flags(const Case& c);

}  // namespace divcheck::cuda

// The __global__ row kernels of the logit-level divergences and their table: the 6 row policies
// with gradients, each for one of the path sets of a launch, and forward only (LossOnly, every
// path but plain_pow2_t, plain_recip_t and prob_unit_t) (device_types.hpp row_variant, row_paths,
// RowPaths), and the deferred forward-only KL and cross-entropy kernels; plain_pow2_t and
// plain_recip_t only for the policies of the temperature rows (has_temperature_kernels: KL with
// gradients and deferred, Jefferys with gradients and loss-only), prob_unit_t only for those of
// the rows with log_target (has_probability_kernels: KL and Jefferys, with gradients and
// loss-only). Compiled once per element type in a translation unit of its own
// (logit_row_kernels_{f32,bf16,f16}.cu: 38 kernels each, so that a build compiles them in
// parallel; the partly staged kernels, float32 only, in logit_row_kernels_f32_partial.cu).
// logit_launch.cu picks a kernel through logit_row_kernels.hpp.
#pragma once

#include "kernels/cuda/logit_row_kernels.hpp"
#include "kernels/cuda/logit_rows_kernel.cuh"
#include "kernels/cuda/plan_math.hpp"
#include "kernels/cuda/row_kernel_choice.cuh"

namespace divcheck::cuda {

// At most kRowRegisters registers per thread (__maxnreg__; it excludes __launch_bounds__, and
// the launcher never asks for more than kRowThreadsMax threads): three 256-thread CTAs per SM
// (or one of 512). At 64 (two 512-thread CTAs per SM) the passes spill loop-invariant
// addresses inside their loops.
template <class Elem, class Policy, bool kDeferred, RowPaths kPaths, bool kPartial>
__global__ void __maxnreg__(kRowRegisters) logit_rows_kernel(const RowKernelParams prm) {
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  __shared__ RowKernelShared sh;
  cg::cluster_group cl = cg::this_cluster();
  logit_rows_body<Elem, Policy, kDeferred, kPaths, kPartial>(prm, cl, sh, dyn_smem);
}

// The kernel a launch runs (row_kernel_choice.cuh: the table shared with the kernel emulator).
// kPartial: the partly staged kernels (device_types.hpp partly_staged), compiled for float32 only
// in a translation unit of their own (logit_row_kernels_f32_partial.cu).
template <class Elem, bool kPartial>
struct RowKernelOf {
  template <class Policy, bool kDeferred, RowPaths kPaths>
  RowKernel operator()() const {
    return logit_rows_kernel<Elem, Policy, kDeferred, kPaths, kPartial>;
  }
};

template <class Elem, bool kPartial = false>
RowKernel row_kernel_table(LogitKind k, RowVariant variant, RowPaths paths) {
  return visit_row_kernel(k, variant, paths, RowKernelOf<Elem, kPartial>{});
}

}  // namespace divcheck::cuda

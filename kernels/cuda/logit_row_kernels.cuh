// The __global__ row kernels of the logit-level divergences and their table: the 6 row policies
// with gradients, each for one of the three path sets of a launch, and forward only (LossOnly,
// every path) (device_types.hpp row_variant, row_paths, RowPaths), and the deferred forward-only
// KL and cross-entropy kernels, compiled once per element type in a translation unit of its own
// (logit_row_kernels_{f32,bf16,f16}.cu: 26 kernels each, so that a build compiles them in
// parallel). logit_launch.cu picks a kernel through logit_row_kernels.hpp.
#pragma once

#include <string>

#include "core/errors.hpp"
#include "kernels/cuda/logit_row_kernels.hpp"
#include "kernels/cuda/logit_rows_kernel.cuh"
#include "kernels/cuda/plan_math.hpp"

namespace divcheck::cuda {

// At most kRowRegisters registers per thread (__maxnreg__; it excludes __launch_bounds__, and
// the launcher never asks for more than kRowThreadsMax threads): three 256-thread CTAs per SM
// (or one of 512). At 64 (two 512-thread CTAs per SM) the passes spill loop-invariant
// addresses inside their loops.
template <class Elem, class Policy, bool kDeferred, RowPaths kPaths>
__global__ void __maxnreg__(kRowRegisters) logit_rows_kernel(const RowKernelParams prm) {
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  __shared__ RowKernelShared sh;
  cg::cluster_group cl = cg::this_cluster();
  logit_rows_body<Elem, Policy, kDeferred, kPaths>(prm, cl, sh, dyn_smem);
}

// The kernel of a policy: with gradients, the one of the launch's paths; forward only, its
// LossOnly form with every path (device_types.hpp RowPaths).
template <class Elem, class Policy>
RowKernel row_kernel_of(RowVariant variant, RowPaths paths) {
  if (variant == RowVariant::loss_only) return logit_rows_kernel<Elem, LossOnly<Policy>, false, RowPaths::all>;
  switch (paths) {
    case RowPaths::plain_unit_t: return logit_rows_kernel<Elem, Policy, false, RowPaths::plain_unit_t>;
    case RowPaths::plain_scaled_t: return logit_rows_kernel<Elem, Policy, false, RowPaths::plain_scaled_t>;
    case RowPaths::general: return logit_rows_kernel<Elem, Policy, false, RowPaths::general>;
    case RowPaths::all: break;
  }
  throw InvalidArgument("paths", std::to_string(static_cast<int>(paths)), "not the path set of a launch");
}

template <class Elem>
RowKernel row_kernel_table(LogitKind k, RowVariant variant, RowPaths paths) {
  if (variant == RowVariant::deferred) {  // the forward-only one-exchange kernels: KL and cross-entropy
    if (paths != RowPaths::plain_unit_t)
      throw InvalidArgument("paths", std::to_string(static_cast<int>(paths)), "a deferred kernel is plain at T = 1");
    if (k == LogitKind::kl) return logit_rows_kernel<Elem, KlPolicy, true, RowPaths::plain_unit_t>;
    if (k == LogitKind::cross_entropy) return logit_rows_kernel<Elem, CrossEntropyPolicy, true, RowPaths::plain_unit_t>;
    throw InvalidArgument("kind", std::to_string(static_cast<int>(k)), "has no deferred row kernel (not KL or CE)");
  }
  switch (k) {
    case LogitKind::kl: return row_kernel_of<Elem, KlPolicy>(variant, paths);
    case LogitKind::jefferys: return row_kernel_of<Elem, JefferysPolicy>(variant, paths);
    case LogitKind::cross_entropy: return row_kernel_of<Elem, CrossEntropyPolicy>(variant, paths);
    case LogitKind::jensen_shannon: return row_kernel_of<Elem, JensenShannonPolicy>(variant, paths);
    case LogitKind::hellinger: return row_kernel_of<Elem, HellingerPolicy>(variant, paths);
    case LogitKind::total_variation: return row_kernel_of<Elem, TotalVariationPolicy>(variant, paths);
  }
  throw InvalidArgument("kind", std::to_string(static_cast<int>(k)), "not a logit row kernel");
}

}  // namespace divcheck::cuda

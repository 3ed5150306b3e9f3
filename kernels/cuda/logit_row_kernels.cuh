// The __global__ row kernels of the logit-level divergences and their table (6 row policies,
// the same with gradients on the plain path at T = 1 alone, the deferred forward-only KL and
// cross-entropy kernels, and the loss-only forward kernels of the 6 policies: device_types.hpp
// row_variant), compiled once per element type in a translation unit of its own
// (logit_row_kernels_{f32,bf16,f16}.cu: 20 kernels each, so that a build compiles them in
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
template <class Elem, class Policy, bool kDeferred, bool kPlainUnitOnly = false>
__global__ void __maxnreg__(kRowRegisters) logit_rows_kernel(const RowKernelParams prm) {
  extern __shared__ __align__(16) unsigned char dyn_smem[];
  __shared__ RowKernelShared sh;
  cg::cluster_group cl = cg::this_cluster();
  logit_rows_body<Elem, Policy, kDeferred, kPlainUnitOnly>(prm, cl, sh, dyn_smem);
}

template <class Elem>
RowKernel row_kernel_table(LogitKind k, RowVariant variant) {
  if (variant == RowVariant::deferred) {  // the forward-only one-exchange kernels: KL and cross-entropy
    if (k == LogitKind::kl) return logit_rows_kernel<Elem, KlPolicy, true>;
    if (k == LogitKind::cross_entropy) return logit_rows_kernel<Elem, CrossEntropyPolicy, true>;
    throw InvalidArgument("kind", std::to_string(static_cast<int>(k)), "has no deferred row kernel (not KL or CE)");
  }
  if (variant == RowVariant::loss_only) {  // forward only: the loss's sums alone, no gradient pass
    switch (k) {
      case LogitKind::kl: return logit_rows_kernel<Elem, LossOnly<KlPolicy>, false>;
      case LogitKind::jefferys: return logit_rows_kernel<Elem, LossOnly<JefferysPolicy>, false>;
      case LogitKind::cross_entropy: return logit_rows_kernel<Elem, LossOnly<CrossEntropyPolicy>, false>;
      case LogitKind::jensen_shannon: return logit_rows_kernel<Elem, LossOnly<JensenShannonPolicy>, false>;
      case LogitKind::hellinger: return logit_rows_kernel<Elem, LossOnly<HellingerPolicy>, false>;
      case LogitKind::total_variation: return logit_rows_kernel<Elem, LossOnly<TotalVariationPolicy>, false>;
    }
    throw InvalidArgument("kind", std::to_string(static_cast<int>(k)), "not a logit row kernel");
  }
  if (variant == RowVariant::full_plain) {  // with gradients, the plain path at T = 1 alone
    switch (k) {
      case LogitKind::kl: return logit_rows_kernel<Elem, KlPolicy, false, true>;
      case LogitKind::jefferys: return logit_rows_kernel<Elem, JefferysPolicy, false, true>;
      case LogitKind::cross_entropy: return logit_rows_kernel<Elem, CrossEntropyPolicy, false, true>;
      case LogitKind::jensen_shannon: return logit_rows_kernel<Elem, JensenShannonPolicy, false, true>;
      case LogitKind::hellinger: return logit_rows_kernel<Elem, HellingerPolicy, false, true>;
      case LogitKind::total_variation: return logit_rows_kernel<Elem, TotalVariationPolicy, false, true>;
    }
    throw InvalidArgument("kind", std::to_string(static_cast<int>(k)), "not a logit row kernel");
  }
  switch (k) {
    case LogitKind::kl: return logit_rows_kernel<Elem, KlPolicy, false>;
    case LogitKind::jefferys: return logit_rows_kernel<Elem, JefferysPolicy, false>;
    case LogitKind::cross_entropy: return logit_rows_kernel<Elem, CrossEntropyPolicy, false>;
    case LogitKind::jensen_shannon: return logit_rows_kernel<Elem, JensenShannonPolicy, false>;
    case LogitKind::hellinger: return logit_rows_kernel<Elem, HellingerPolicy, false>;
    case LogitKind::total_variation: return logit_rows_kernel<Elem, TotalVariationPolicy, false>;
  }
  throw InvalidArgument("kind", std::to_string(static_cast<int>(k)), "not a logit row kernel");
}

}  // namespace divcheck::cuda

// The partly staged logit row kernels of bf16 logits (logit_row_kernels.cuh, kPartial; device_types.hpp
// partly_staged): a translation unit of their own, so that a build compiles them in parallel with
// the whole staged kernels.
#include "kernels/cuda/logit_row_kernels.cuh"

namespace divcheck::cuda {

RowKernel row_kernel_bf16_partial(LogitKind kind, RowVariant variant, RowPaths paths) {
  return row_kernel_table<__nv_bfloat16, true>(kind, variant, paths);
}

}  // namespace divcheck::cuda

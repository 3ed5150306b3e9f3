// The logit row kernels of f32 logits (logit_row_kernels.cuh): a translation unit per element type.
#include "kernels/cuda/logit_row_kernels.cuh"

namespace divcheck::cuda {

RowKernel row_kernel_f32(LogitKind kind, RowVariant variant, RowPaths paths) {
  return row_kernel_table<float>(kind, variant, paths);
}

}  // namespace divcheck::cuda

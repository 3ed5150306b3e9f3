// The logit row kernels of f16 logits (logit_row_kernels.cuh): a translation unit per element type.
#include "kernels/cuda/logit_row_kernels.cuh"

namespace divcheck::cuda {

RowKernel row_kernel_f16(LogitKind kind, RowVariant variant, RowPaths paths) {
  return row_kernel_table<__half>(kind, variant, paths);
}

}  // namespace divcheck::cuda

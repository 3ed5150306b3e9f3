// The table of the logit row kernels (logit_row_kernels.cuh), one function per element type,
// each defined in its own translation unit (logit_row_kernels_{f32,bf16,f16}.cu). Plain C++17.
#pragma once

#include "kernels/cuda/device_types.hpp"

namespace divcheck::cuda {

struct RowKernelParams;  // logit_rows_kernel.cuh
using RowKernel = void (*)(RowKernelParams);

// The row kernel of `kind` for the element type in the variant and for the paths the launch
// needs (device_types.hpp row_variant, row_paths), with `sets` sets of slices (1, or 2 where
// has_two_set_kernel); InvalidArgument for a deferred kernel of a kind other than KL and
// cross-entropy or off the plain T = 1 path, and for two sets where no such kernel exists.
RowKernel row_kernel_f32(LogitKind kind, RowVariant variant, RowPaths paths, int sets);
RowKernel row_kernel_bf16(LogitKind kind, RowVariant variant, RowPaths paths, int sets);
RowKernel row_kernel_f16(LogitKind kind, RowVariant variant, RowPaths paths, int sets);

}  // namespace divcheck::cuda

// The table of the logit row kernels (logit_row_kernels.cuh), one function per element type,
// each defined in its own translation unit (logit_row_kernels_{f32,bf16,f16}.cu). Plain C++17.
#pragma once

#include "kernels/cuda/device_types.hpp"

namespace divcheck::cuda {

struct RowKernelParams;  // logit_rows_kernel.cuh
using RowKernel = void (*)(RowKernelParams);

// The row kernel of `kind` for the element type; deferred: the forward-only one-exchange kernel
// (defers_row_loss), which only KL and cross-entropy have (InvalidArgument for the others).
RowKernel row_kernel_f32(LogitKind kind, bool deferred);
RowKernel row_kernel_bf16(LogitKind kind, bool deferred);
RowKernel row_kernel_f16(LogitKind kind, bool deferred);

}  // namespace divcheck::cuda

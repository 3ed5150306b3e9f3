// The table of the logit row kernels (logit_row_kernels.cuh), one function per element type,
// each defined in its own translation unit (logit_row_kernels_{f32,bf16,f16}.cu). Plain C++17.
#pragma once

#include "kernels/cuda/device_types.hpp"

namespace divcheck::cuda {

struct RowKernelParams;  // row_kernel_params.cuh
using RowKernel = void (*)(RowKernelParams);

// The row kernel of `kind` for the element type in the variant and for the paths the launch
// needs (device_types.hpp row_variant, row_paths); InvalidArgument for a deferred kernel of a kind
// other than KL and cross-entropy or off the plain T = 1 path.
RowKernel row_kernel_f32(LogitKind kind, RowVariant variant, RowPaths paths);
RowKernel row_kernel_bf16(LogitKind kind, RowVariant variant, RowPaths paths);
RowKernel row_kernel_f16(LogitKind kind, RowVariant variant, RowPaths paths);
// The partly staged kernel of the same launch (device_types.hpp partly_staged; float32 logits only:
// kPartialStageDtype).
RowKernel row_kernel_f32_partial(LogitKind kind, RowVariant variant, RowPaths paths);

// The streamed row kernel (stream_rows_kernel.cuh, stream_row_kernels.cu) of a deferred launch
// (defers_row_loss): (params, tiles per row, the messages' stride per row). InvalidArgument for a
// launch that is not deferred.
using StreamKernel = void (*)(RowKernelParams, unsigned, unsigned);
StreamKernel stream_row_kernel(const LogitArgs& a);

// The streamed row kernel with gradients (stream_grad_rows_kernel.cuh, stream_grad_row_kernels.cu)
// of a one-pass row's launch (one_pass_row_launch): (params, tiles per row, the messages' stride
// per row, the rows' arrivals; a cooperative launch). InvalidArgument for any other launch.
using StreamGradKernel = void (*)(RowKernelParams, unsigned, unsigned, unsigned*);
StreamGradKernel stream_grad_row_kernel(const LogitArgs& a);

}  // namespace divcheck::cuda

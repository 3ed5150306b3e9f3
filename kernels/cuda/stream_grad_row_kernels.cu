// The __global__ streamed row kernels with gradients (stream_grad_rows_kernel.cuh) of KL and
// cross-entropy at T = 1 and KL at T = 2^k or by the reciprocal, for each element type: 24 kernels in one translation
// unit of their own, each with the register caps 64 and 80 (stream_plan.hpp stream_registers_of).
#include "kernels/cuda/logit_row_kernels.hpp"
#include "kernels/cuda/row_kernel_choice.cuh"
#include "kernels/cuda/stream_grad_rows_kernel.cuh"
#include "kernels/cuda/stream_plan.hpp"

namespace divcheck::cuda {

namespace {

template <class Elem, class Policy, TempForm kT, int kRegisters>
__global__ void __maxnreg__(kRegisters)
    stream_grad_rows_kernel(const RowKernelParams prm, unsigned tiles, unsigned stride, unsigned* arrivals) {
  __shared__ __align__(16) float rec[kRowThreadsMax / 32][kRecordFloats];
  __shared__ StreamGradShared sh;
  stream_grad_rows_body<Elem, Policy, kT>(prm, tiles, stride, arrivals, rec, sh);
}

template <class Elem, int kRegisters>
struct StreamGradKernelOf {
  template <class Policy, TempForm kT>
  StreamGradKernel operator()() const {
    return stream_grad_rows_kernel<Elem, Policy, kT, kRegisters>;
  }
};

template <class Elem>
StreamGradKernel stream_grad_kernel_of(const LogitArgs& a) {
  if (stream_registers_of(a) == 80) return visit_one_pass_kernel(a, StreamGradKernelOf<Elem, 80>{});
  return visit_one_pass_kernel(a, StreamGradKernelOf<Elem, 64>{});
}

}  // namespace

StreamGradKernel stream_grad_row_kernel(const LogitArgs& a) {
  switch (a.dtype) {
    case FloatKind::f32: return stream_grad_kernel_of<float>(a);
    case FloatKind::bf16: return stream_grad_kernel_of<__nv_bfloat16>(a);
    case FloatKind::f16: return stream_grad_kernel_of<__half>(a);
  }
  throw InvalidArgument("dtype", std::to_string(static_cast<int>(a.dtype)), "not f32, bf16 or f16");
}

}  // namespace divcheck::cuda

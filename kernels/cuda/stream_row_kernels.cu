// The __global__ streamed row kernels (stream_rows_kernel.cuh) of forward-only KL and
// cross-entropy at T = 1 and KL at T = 2^k or by the reciprocal, for each element type: 24 kernels in one translation
// unit of their own (the cluster kernels' units do not recompile for them), each with the register
// caps 64 and 80.
#include "kernels/cuda/logit_row_kernels.hpp"
#include "kernels/cuda/row_kernel_choice.cuh"
#include "kernels/cuda/stream_plan.hpp"
#include "kernels/cuda/stream_rows_kernel.cuh"

namespace divcheck::cuda {

namespace {

// At most kRegisters registers per thread (stream_plan.hpp stream_registers_of): 64 gives two
// 512-thread CTAs (float) per SM, each thread holding 32 registers of row data; 80 three
// 256-thread CTAs (16-bit; at 64 their group loop spilled).
template <class Elem, class Policy, TempForm kT, int kRegisters>
__global__ void __maxnreg__(kRegisters) stream_rows_kernel(const RowKernelParams prm, unsigned tiles, unsigned stride) {
  __shared__ __align__(16) float rec[kRowThreadsMax / 32][kRecordFloats];
  stream_rows_body<Elem, Policy, kT>(prm, tiles, stride, rec);
}

// The kernel of a deferred launch's policy and temperature form (row_kernel_choice.cuh
// visit_combine_kernel: the same choice as its combine kernel's).
template <class Elem, int kRegisters>
struct StreamKernelOf {
  template <class Policy, TempForm kT>
  StreamKernel operator()() const {
    return stream_rows_kernel<Elem, Policy, kT, kRegisters>;
  }
};

template <class Elem>
StreamKernel stream_kernel_of(const LogitArgs& a) {
  if (stream_registers_of(a) == 80) return visit_combine_kernel(a, StreamKernelOf<Elem, 80>{});
  return visit_combine_kernel(a, StreamKernelOf<Elem, 64>{});
}

}  // namespace

StreamKernel stream_row_kernel(const LogitArgs& a) {
  switch (a.dtype) {
    case FloatKind::f32: return stream_kernel_of<float>(a);
    case FloatKind::bf16: return stream_kernel_of<__nv_bfloat16>(a);
    case FloatKind::f16: return stream_kernel_of<__half>(a);
  }
  throw InvalidArgument("dtype", std::to_string(static_cast<int>(a.dtype)), "not f32, bf16 or f16");
}

}  // namespace divcheck::cuda

// tvd_prob on the GPU (SPEC.md; the LigerTVDLoss family of the bug report).
//
// One CTA of 128 threads per row, one pass over HBM: p and q are read once (16-byte loads, two
// 1024-column stripes in flight per thread), the gradient (and for reduction "none" the (N, V)
// elementwise loss) written once with 16-byte stores; nothing is kept on chip but the eight
// lane sums per thread. Thread t holds lanes 8t .. 8t + 7 of kernels/math/reduction_order.hpp
// (columns 8t + k, 8t + k + 1024, ... in order) and the row value 0.5 * sum |p - q| is reduced
// by the same pairwise tree as the CPU backend's lane_sum, so every output is bitwise equal to
// kernels/cpu/tvd_prob.cpp (every operation is an exactly specified IEEE operation:
// subtraction, abs, add, multiply by 0.5, sign selection). Measured on the H200
// (bench/RESULTS.md, step 39): 1.01-1.04 of the copy bandwidth forward, 0.91-0.93 forward+backward.
// The gradient is tv_subgradient (kernels/math/sign.hpp): exactly +0 at ties p == q, the case
// the public kernel's two-way select gets wrong. Ignored rows (labels == ignore_index) are never
// read; their gradient (and "none" loss) rows are written as exact +0.
// Before the rows: n_valid and the scale on the device; after: the total over rows (lane order).
#include <algorithm>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_api.hpp"
#include "kernels/cuda/position_kernels.hpp"
#include "kernels/cuda/tvd_prob_rows.cuh"
#include "kernels/cuda/workspace.hpp"

namespace divcheck::cuda {

namespace {

using TvdKernel = void (*)(TvdRowParams);

TvdKernel tvd_kernel_for(FloatKind k) {
  switch (k) {
    case FloatKind::f32: return tvd_prob_rows_kernel<float>;
    case FloatKind::bf16: return tvd_prob_rows_kernel<__nv_bfloat16>;
    case FloatKind::f16: return tvd_prob_rows_kernel<__half>;
  }
  throw InvalidArgument("dtype", std::to_string(static_cast<int>(k)), "not a float kind of tvd_prob");
}

void require(bool ok, const char* argument, const std::string& value, const char* why) {
  if (!ok) throw InvalidArgument(argument, value, why);
}

}  // namespace

std::size_t tvd_prob_workspace_bytes(std::int64_t rows) { return TvdWorkspace::bytes(rows); }

void launch_tvd_prob(const TvdProbArgs& a, cudaStream_t stream) {
  require(a.rows >= 1, "rows", std::to_string(a.rows), "must be >= 1");
  require(a.vocab >= 1, "vocab", std::to_string(a.vocab), "must be >= 1");
  require(a.p != nullptr && a.q != nullptr, "p/q", "nullptr", "both probability tensors are required");
  require(a.loss != nullptr, "loss", "nullptr", "the loss output is required");
  require(a.workspace != nullptr, "workspace", "nullptr", "tvd_prob_workspace_bytes(rows) bytes are required");
  require((a.grad_p == nullptr) == (a.grad_output == nullptr), "grad_output", a.grad_output ? "set" : "nullptr",
          "must be given exactly when grad_p is");
  const bool none = a.reduction == TvdReduction::none;
  const TvdWorkspace ws = TvdWorkspace::carve(a.workspace, a.rows);

  launch_tvd_scale(a.valid, a.rows, a.vocab, a.reduction, a.grad_output, ws.total, ws.scale, ws.half_scale_g, stream);
  const TvdRowParams prm = make_tvd_params(a, ws);
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(a.rows, 0x7fffffff));
  tvd_kernel_for(a.dtype)<<<grid, kTvdThreads, 0, stream>>>(prm);
  check_launch("tvd_prob_rows_kernel");
  if (!none) launch_tvd_total(a.valid, a.rows, ws.row_value, ws.scale, a.loss, stream);
}

}  // namespace divcheck::cuda

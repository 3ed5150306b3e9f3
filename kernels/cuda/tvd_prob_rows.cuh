// The device code of tvd_prob (launcher and documentation in tvd_prob_kernels.cu): one CTA of
// 1024 threads per row, lane-ordered row sum, gradient tv_subgradient (exact 0 at ties).
// The kernel is static: each translation unit that launches it has its own.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/cuda/workspace.hpp"
#include "kernels/math/total_variation.hpp"

namespace divcheck::cuda {

struct TvdRowParams {
  const void* p;
  const void* q;
  const std::uint8_t* valid;
  std::int64_t rows, vocab;
  bool none;
  const float* g;             // (N, V) upstream gradient for "none"; else unused
  const float* half_scale_g;  // device scalar (float)(0.5 * scale * g) when not "none"
  void* gp;                   // gradient to p, or nullptr
  float* loss_elems;          // (N, V) for "none", else nullptr
  float* row_value;           // (N) for the other reductions
};

// The kernel parameters of a launch (host side; shared with the kernel emulator).
inline TvdRowParams make_tvd_params(const TvdProbArgs& a, const TvdWorkspace& ws) {
  const bool none = a.reduction == TvdReduction::none;
  return TvdRowParams{a.p,           a.q,         a.valid,         a.rows,   a.vocab,
                      none,          a.grad_output, ws.half_scale_g, a.grad_p, none ? a.loss : nullptr,
                      ws.row_value};
}

template <class Elem>
static __global__ void __launch_bounds__(kThreads, 1) tvd_prob_rows_kernel(const TvdRowParams prm) {
  __shared__ float warp_sums[kWarps];
  const std::int64_t V = prm.vocab;
  const Elem* __restrict__ pp = static_cast<const Elem*>(prm.p);
  const Elem* __restrict__ qq = static_cast<const Elem*>(prm.q);
  Elem* __restrict__ gp = static_cast<Elem*>(prm.gp);
  float* __restrict__ le = prm.loss_elems;
  for (std::int64_t row = blockIdx.x; row < prm.rows; row += gridDim.x) {
    const std::int64_t off = row * V;
    if (prm.valid && prm.valid[row] == 0) {  // ignored row: inert
      for (std::int64_t j = threadIdx.x; j < V; j += kThreads) {
        if (gp) store_float(gp + off + j, 0.0f);
        if (le) le[off + j] = 0.0f;
      }
      continue;
    }
    const float hs = (gp && !prm.none) ? *prm.half_scale_g : 0.0f;
    float acc = 0.0f;
#pragma unroll 4
    for (std::int64_t j = threadIdx.x; j < V; j += kThreads) {
      const float pv = load_float(pp + off + j), qv = load_float(qq + off + j);
      if (prm.none) le[off + j] = math::tvd_prob_element(pv, qv);
      else acc = acc + math::tv_abs_term(pv, qv, true);
      if (gp) {
        const float coef = prm.none ? static_cast<float>(0.5 * static_cast<double>(prm.g[off + j])) : hs;
        store_float(gp + off + j, math::tvd_prob_grad(pv, qv, coef));
      }
    }
    if (prm.none) continue;
    // The lane tree of reduction_order.hpp (as cpu/lane_sum.hpp).
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float w = warp_tree_sum(acc);
    if (lane == 0) warp_sums[warp] = w;
    __syncthreads();
    if (warp == 0) {
      const float s = warp_tree_sum(warp_sums[lane]);
      if (lane == 0) prm.row_value[row] = 0.5f * s;
    }
    __syncthreads();
  }
}

}  // namespace divcheck::cuda

// The device code of tvd_prob (launcher and documentation in tvd_prob_kernels.cu): one CTA of
// 128 threads per row; thread t owns the lanes 8t .. 8t + 7 of kernels/math/reduction_order.hpp
// and reads them as one 8-column chunk per 1024-column stripe (16-byte loads: one for 16-bit
// elements, two for float), so the lane sums, and the lane tree after them, are exactly the CPU
// backend's. The gradient is tv_subgradient (exact 0 at ties).
// The kernel is static: each translation unit that launches it has its own.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/workspace.hpp"
#include "kernels/math/reduction_order.hpp"
#include "kernels/math/total_variation.hpp"

namespace divcheck::cuda {

inline constexpr int kTvdThreads = math::kLanes / 8;  // 128: eight lanes per thread
inline constexpr int kTvdStripeUnroll = 2;           // stripes whose loads are in flight together

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
static __global__ void __launch_bounds__(kTvdThreads) tvd_prob_rows_kernel(const TvdRowParams prm) {
  __shared__ float warp_sums[math::kLanes / math::kWarpSize];
  const std::int64_t V = prm.vocab;
  const Elem* __restrict__ pp = static_cast<const Elem*>(prm.p);
  const Elem* __restrict__ qq = static_cast<const Elem*>(prm.q);
  Elem* __restrict__ gp = static_cast<Elem*>(prm.gp);
  float* __restrict__ le = prm.loss_elems;
  const int t = static_cast<int>(threadIdx.x);
  // Every row starts 16-byte aligned when the bases are aligned and a row is a whole number of
  // 16-byte words; then every whole chunk can be moved with 16-byte loads and stores.
  const bool rows_aligned = (V * static_cast<std::int64_t>(sizeof(Elem))) % 16 == 0 && aligned16(pp) &&
                            aligned16(qq) && (gp == nullptr || aligned16(gp));
  const bool loss_aligned = V % 4 == 0 && (le == nullptr || aligned16(le));
  for (std::int64_t row = blockIdx.x; row < prm.rows; row += gridDim.x) {
    const std::int64_t off = row * V;
    if (prm.valid && prm.valid[row] == 0) {  // ignored row: inert, never read
      const RawChunk<Elem> zero{};
      for (std::int64_t c0 = 8 * t; c0 < V; c0 += math::kLanes) {
        const std::int64_t n = V - c0;
        if (gp) store_raw(gp + off + c0, n < 8 ? static_cast<int>(n) : 8, rows_aligned && n >= 8, zero);
        if (le)
          for (int k = 0; k < 8 && k < n; ++k) le[off + c0 + k] = 0.0f;
      }
      continue;
    }
    const float hs = (gp && !prm.none) ? *prm.half_scale_g : 0.0f;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // lanes 8t .. 8t + 7
    for (std::int64_t base = 8 * t; base < V; base += kTvdStripeUnroll * math::kLanes) {
      RawChunk<Elem> pr[kTvdStripeUnroll], qr[kTvdStripeUnroll];
#pragma unroll
      for (int u = 0; u < kTvdStripeUnroll; ++u) {  // all loads first: they are in flight together
        const std::int64_t c0 = base + static_cast<std::int64_t>(u) * math::kLanes;
        const std::int64_t n = c0 < V ? V - c0 : 0;
        const bool vec = rows_aligned && n >= 8;
        if (n > 0) {
          const int cnt = n < 8 ? static_cast<int>(n) : 8;
          load_raw<Elem, true>(pp + off + c0, cnt, vec, pr[u]);
          load_raw<Elem, true>(qq + off + c0, cnt, vec, qr[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kTvdStripeUnroll; ++u) {
        const std::int64_t c0 = base + static_cast<std::int64_t>(u) * math::kLanes;
        if (c0 >= V) break;
        const std::int64_t n = V - c0;
        const bool vec = rows_aligned && n >= 8;
        float pv[8], qv[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          pv[k] = raw_get<Elem>(pr[u], k);
          qv[k] = raw_get<Elem>(qr[u], k);
        }
        if (prm.none) {
          float l[8];
#pragma unroll
          for (int k = 0; k < 8; ++k) l[k] = math::tvd_prob_element(pv[k], qv[k]);
          if (loss_aligned && n >= 8) {
            __stcs(reinterpret_cast<float4*>(le + off + c0), make_float4(l[0], l[1], l[2], l[3]));
            __stcs(reinterpret_cast<float4*>(le + off + c0) + 1, make_float4(l[4], l[5], l[6], l[7]));
          } else {
            for (int k = 0; k < 8 && k < n; ++k) le[off + c0 + k] = l[k];
          }
        } else {
#pragma unroll
          for (int k = 0; k < 8; ++k)
            if (k < n) acc[k] = acc[k] + math::tv_abs_term(pv[k], qv[k], true);
        }
        if (gp) {
          RawChunk<Elem> gr;
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            const float coef =
                prm.none ? (k < n ? static_cast<float>(0.5 * static_cast<double>(prm.g[off + c0 + k])) : 0.0f) : hs;
            raw_set<Elem>(gr, k, math::tvd_prob_grad(pv[k], qv[k], coef));
          }
          store_raw(gp + off + c0, n < 8 ? static_cast<int>(n) : 8, vec, gr);
        }
      }
    }
    if (prm.none) continue;
    // The lane tree of reduction_order.hpp (as cpu/lane_sum.hpp). The 32 lanes of tree warp w
    // are held by threads 4w .. 4w + 3: offsets 16 and 8 cross threads (shuffles by 2 and 1),
    // offsets 4, 2, 1 are inside thread 4w.
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[k] = acc[k] + __shfl_down_sync(0xffffffffu, acc[k], 2);
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[k] = acc[k] + __shfl_down_sync(0xffffffffu, acc[k], 1);
#pragma unroll
    for (int k = 0; k < 4; ++k) acc[k] = acc[k] + acc[k + 4];
    acc[0] = acc[0] + acc[2];
    acc[1] = acc[1] + acc[3];
    acc[0] = acc[0] + acc[1];
    if ((t & 3) == 0) warp_sums[t >> 2] = acc[0];
    __syncthreads();
    if (t < 32) {
      float s = warp_sums[t];
#pragma unroll
      for (int offset = 16; offset >= 1; offset >>= 1) s = s + __shfl_down_sync(0xffffffffu, s, offset);
      if (t == 0) prm.row_value[row] = 0.5f * s;
    }
    __syncthreads();
  }
}

}  // namespace divcheck::cuda

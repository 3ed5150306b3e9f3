// The row kernel of the logit-level divergences: one thread block cluster of C CTAs x 1024
// threads per position (b, t); CTA c owns the columns [c W, c W + W) of the row (W a multiple
// of 1024, so thread l is lane l of reduction_order.hpp within its slice).
//
// Passes over HBM and what stays on chip, per valid position:
//   staged (the plan fits the slices in shared memory; e.g. V = 128256 bf16 with C = 4,
//   f32 with C = 8; V = 256000 bf16 with C = 8, f32 with C = 16):
//     read y and x once (16-byte loads, the max and the poison flag taken on the way) into
//     shared memory; every later pass reads shared memory; the gradients are written once.
//     HBM traffic = the minimum: 2 V reads (+ V support bytes) and one write per gradient.
//   not staged (slower fallback, rows too long for the cluster's shared memory):
//     the same passes read global memory: 4 reads of both rows (3 without gradients).
// The passes (each CTA over its slice; statistics combined across the cluster, row_reduce.cuh):
//   1. max of y and of x, poison flag (NaN, +inf, or no finite logit: the row is NaN);
//   2. S of each side, FixedSum of exp((z - m)/T) (exact, order-independent), log S;
//   3. the policy's lane sums (row_policies.cuh), combined in the fixed tree order; the loss;
//   4. gradients: w g / T (coef of the sequence) times the policy's formula, rounded once
//      into the logits' dtype, written with 16-byte stores where aligned.
// Masked positions: nothing is read; the gradient slices are written as exact +0.
// On chip besides the slices: the reduction scratch and the cluster slots (< 4 KB).
// All indices and offsets are 64-bit. At T = 1 a specialised copy of the passes skips the
// division by T (the same bits). The __global__ wrapper, which declares the shared memory, is
// in logit_launch.cu; this header is also compiled by the kernel emulator (tests/cuda).
#pragma once

#include <cstdint>

#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_policies.cuh"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/softmax.hpp"

namespace divcheck::cuda {

struct RowKernelParams {
  const void* y;                 // p-side logits (B*T, V)
  const void* x;                 // q-side logits
  const uint8_t* valid;          // (B*T) or nullptr
  const uint8_t* support;        // (B*T, V) or nullptr
  int64_t rows, vocab, seq;
  int64_t slice;                 // W: columns per CTA
  float temperature;
  bool prob_path;
  bool staged;
  RowOptions opt;
  const float* coef;             // per sequence b; nullptr when no gradient is wanted
  void* gp;                      // d/dy or nullptr
  void* gq;                      // d/dx or nullptr
  float* row_loss;               // (B*T) per-position loss
};

// The kernel parameters of a launch (host side; shared with the kernel emulator).
inline RowKernelParams make_row_params(const LogitArgs& a, const LogitPlan& plan, float* row_loss, const float* coef) {
  RowKernelParams prm{};
  prm.y = a.p_logits;
  prm.x = a.q_logits;
  prm.valid = a.valid;
  prm.support = a.support;
  prm.rows = a.batch * a.seq;
  prm.vocab = a.vocab;
  prm.seq = a.seq;
  prm.slice = plan.slice;
  prm.temperature = static_cast<float>(a.temperature);
  prm.prob_path = a.prob_path;
  prm.staged = plan.staged;
  prm.opt.has_support = a.support != nullptr;
  prm.opt.capped = a.capped;
  prm.opt.max_loss = static_cast<float>(a.max_loss);
  prm.opt.scaling_factor = static_cast<float>(a.scaling_factor);
  prm.coef = coef;
  prm.gp = a.grad_p;
  prm.gq = a.grad_q;
  prm.row_loss = row_loss;
  return prm;
}

inline constexpr int kLoadUnroll = 4;  // 16-byte loads in flight per thread while staging
inline constexpr int kQuietNaNBits = 0x7fc00000;  // the NaN the CPU backend writes (quiet_NaN)

// Pass 1 over one side's slice: max and poison flag; copies the slice to `stage` when given.
template <class Elem>
__device__ void scan_slice(const Elem* __restrict__ g, int64_t n, Elem* stage, float& mx, bool& poison) {
  auto note = [&](float z) {
    if (math::poisons_row(z)) poison = true;
    else mx = fmaxf(mx, z);
  };
  constexpr int kV = kVec<Elem>;
  const int64_t nvec = aligned16(g) ? n / kV : 0;
  const uint4* gv = reinterpret_cast<const uint4*>(g);
  uint4* sv = reinterpret_cast<uint4*>(stage);
  for (int64_t base = threadIdx.x; base < nvec; base += kLoadUnroll * kThreads) {
    uint4 ch[kLoadUnroll];
#pragma unroll
    for (int u = 0; u < kLoadUnroll; ++u) {
      const int64_t i = base + static_cast<int64_t>(u) * kThreads;
      if (i < nvec) ch[u] = __ldg(gv + i);
    }
#pragma unroll
    for (int u = 0; u < kLoadUnroll; ++u) {
      const int64_t i = base + static_cast<int64_t>(u) * kThreads;
      if (i < nvec) {
        if (stage) sv[i] = ch[u];
#pragma unroll
        for (int k = 0; k < kV; ++k) note(chunk_get<Elem>(ch[u], k));
      }
    }
  }
  for (int64_t j = nvec * kV + threadIdx.x; j < n; j += kThreads) {
    const Elem e = g[j];
    if (stage) stage[j] = e;
    note(ElemIo<Elem>::to_float(e));
  }
}

__device__ __forceinline__ void copy_bytes(const uint8_t* __restrict__ g, int64_t n, uint8_t* stage) {
  for (int64_t j = threadIdx.x; j < n; j += kThreads) stage[j] = g[j];
}

// Writes `value` (rounded once to Elem) to n elements.
template <class Elem>
__device__ void fill_slice(Elem* g, int64_t n, float value) {
  if (g == nullptr) return;
  constexpr int kV = kVec<Elem>;
  const int64_t nvec = aligned16(g) ? n / kV : 0;
  uint4 ch{0u, 0u, 0u, 0u};
#pragma unroll
  for (int k = 0; k < kV; ++k) chunk_set<Elem>(ch, k, value);
  uint4* gv = reinterpret_cast<uint4*>(g);
  for (int64_t i = threadIdx.x; i < nvec; i += kThreads) __stcs(gv + i, ch);
  for (int64_t j = nvec * kV + threadIdx.x; j < n; j += kThreads) store_float(g + j, value);
}

struct SideRow {
  float m, s, log_s;
};

// The temperature as the shared formulas see it. At T = 1 the constant lets the compiler drop
// the division in math::shifted_logit: (z - m) / 1 is exactly z - m, so the results are the same
// bits either way; only the work differs.
template <bool kUnitT>
__device__ __forceinline__ float temperature_of(const RowKernelParams& prm) {
  return kUnitT ? 1.0f : prm.temperature;
}

// The column v of both sides (y_v, x_v as floats).
__device__ __forceinline__ Column make_column(float zy, float zx, bool s, const SideRow& py, const SideRow& qx,
                                              float temperature, bool prob_path) {
  Column c;
  side_column(zy, py.m, py.s, py.log_s, temperature, prob_path, c.p, c.lp);
  side_column(zx, qx.m, qx.s, qx.log_s, temperature, prob_path, c.q, c.lq);
  c.s = s;
  return c;
}

// Pass 4: the gradients of the slice. ysrc/xsrc: the slice (shared or global memory).
template <class Elem, class Policy, bool kUnitT>
__device__ void write_gradients(const RowKernelParams& prm, const Elem* ysrc, const Elem* xsrc, const uint8_t* ssrc,
                                int64_t n, const SideRow& py, const SideRow& qx, const float* st, const RowResult& res,
                                Elem* gp, Elem* gq) {
  if (res.mode != GradMode::values) {
    const float v = res.mode == GradMode::nan ? __int_as_float(kQuietNaNBits) : 0.0f;
    fill_slice(gp, n, v);
    fill_slice(gq, n, v);
    return;
  }
  auto grad_at = [&](float zy, float zx, int64_t j, float& a, float& b) {
    const bool s = ssrc ? ssrc[j] != 0 : true;
    const Column c = make_column(zy, zx, s, py, qx, temperature_of<kUnitT>(prm), prm.prob_path);
    Policy::grads(c, st, prm.opt, res.factor, a, b);
  };
  constexpr int kV = kVec<Elem>;
  const bool vec = aligned16(ysrc) && aligned16(xsrc) && (gp == nullptr || aligned16(gp)) &&
                   (gq == nullptr || aligned16(gq));
  const int64_t nvec = vec ? n / kV : 0;
  for (int64_t i = threadIdx.x; i < nvec; i += kThreads) {
    const uint4 cy = reinterpret_cast<const uint4*>(ysrc)[i];
    const uint4 cx = reinterpret_cast<const uint4*>(xsrc)[i];
    uint4 oy{0u, 0u, 0u, 0u}, ox{0u, 0u, 0u, 0u};
#pragma unroll
    for (int k = 0; k < kV; ++k) {
      float a, b;
      grad_at(chunk_get<Elem>(cy, k), chunk_get<Elem>(cx, k), i * kV + k, a, b);
      chunk_set<Elem>(oy, k, a);
      chunk_set<Elem>(ox, k, b);
    }
    if (gp) __stcs(reinterpret_cast<uint4*>(gp) + i, oy);
    if (gq) __stcs(reinterpret_cast<uint4*>(gq) + i, ox);
  }
  for (int64_t j = nvec * kV + threadIdx.x; j < n; j += kThreads) {
    float a, b;
    grad_at(load_float(ysrc + j), load_float(xsrc + j), j, a, b);
    if (gp) store_float(gp + j, a);
    if (gq) store_float(gq + j, b);
  }
}

// One valid position: passes 1-4 over this CTA's slice.
template <class Elem, class Policy, bool kUnitT>
__device__ void process_row(const RowKernelParams& prm, int64_t row, int64_t v0, int64_t n, Elem* ys, Elem* xs,
                            uint8_t* ss, cg::cluster_group& cl, BlockScratch& sc, ClusterSlots& slots, RowShared& rs) {
  const int64_t off = row * prm.vocab + v0;
  const Elem* yg = static_cast<const Elem*>(prm.y) + off;
  const Elem* xg = static_cast<const Elem*>(prm.x) + off;
  const uint8_t* sg = prm.support ? prm.support + off : nullptr;
  Elem* gp = prm.gp ? static_cast<Elem*>(prm.gp) + off : nullptr;
  Elem* gq = prm.gq ? static_cast<Elem*>(prm.gq) + off : nullptr;
  const bool leader = cl.block_rank() == 0 && threadIdx.x == 0;

  // Pass 1 (and staging).
  float my = -math::kInf, mx = -math::kInf;
  bool poison = false;
  scan_slice(yg, n, prm.staged ? ys : nullptr, my, poison);
  scan_slice(xg, n, prm.staged ? xs : nullptr, mx, poison);
  if (prm.staged && sg) copy_bytes(sg, n, ss);
  reduce_max(cl, sc, slots, rs, my, mx, poison);  // its barriers also publish the staged slices
  if (rs.poison) {
    const float nan = __int_as_float(kQuietNaNBits);
    if (leader) prm.row_loss[row] = nan;
    fill_slice(gp, n, nan);
    fill_slice(gq, n, nan);
    return;
  }
  const Elem* ysrc = prm.staged ? ys : yg;
  const Elem* xsrc = prm.staged ? xs : xg;
  const uint8_t* ssrc = sg ? (prm.staged ? ss : sg) : nullptr;

  // Pass 2: S = sum exp(t_v) of each side, exactly.
  {
    const float m0 = rs.max[0], m1 = rs.max[1];
    math::FixedSum fy, fx;
    for (int64_t j = threadIdx.x; j < n; j += kThreads) {
      fy.add(math::f_exp(math::shifted_logit(load_float(ysrc + j), m0, temperature_of<kUnitT>(prm))));
      fx.add(math::f_exp(math::shifted_logit(load_float(xsrc + j), m1, temperature_of<kUnitT>(prm))));
    }
    reduce_fixed(cl, sc, slots, rs, fy, fx);
  }
  const SideRow py{rs.max[0], rs.s[0], rs.log_s[0]};
  const SideRow qx{rs.max[1], rs.s[1], rs.log_s[1]};

  // Pass 3: the policy's lane sums (thread l = lane l: columns l, l + 1024, ... in order).
  {
    float acc[Policy::kStats];
#pragma unroll
    for (int k = 0; k < Policy::kStats; ++k) acc[k] = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += kThreads) {
      const Column c = make_column(load_float(ysrc + j), load_float(xsrc + j), ssrc ? ssrc[j] != 0 : true, py, qx,
                                   temperature_of<kUnitT>(prm), prm.prob_path);
      Policy::accumulate(c, acc);
    }
    reduce_sums<Policy::kStats>(cl, sc, slots, rs, acc);
  }
  const float coef = prm.coef ? prm.coef[row / prm.seq] : 0.0f;
  const RowResult res = Policy::finish(rs.stats, coef, prm.opt);
  if (leader) prm.row_loss[row] = res.ell;

  // Pass 4.
  if (gp || gq) write_gradients<Elem, Policy, kUnitT>(prm, ysrc, xsrc, ssrc, n, py, qx, rs.stats, res, gp, gq);
}

// The shared memory of one CTA besides the row slices.
struct RowKernelShared {
  BlockScratch sc;
  ClusterSlots slots;
  RowShared rs;
};

// The kernel body (the __global__ wrapper is in logit_launch.cu; it declares the shared memory
// and passes it in): this CTA's share of every row of the cluster's rows.
template <class Elem, class Policy>
__device__ void logit_rows_body(const RowKernelParams& prm, cg::cluster_group& cl, RowKernelShared& sh,
                                unsigned char* dyn_smem) {
  const int64_t ctas = static_cast<int64_t>(cl.num_blocks());
  const int64_t rank = static_cast<int64_t>(cl.block_rank());
  const int64_t v0 = rank * prm.slice;
  const int64_t left = prm.vocab - v0;
  const int64_t n = left <= 0 ? 0 : (left < prm.slice ? left : prm.slice);
  const int64_t slice_bytes = (prm.slice * static_cast<int64_t>(sizeof(Elem)) + 15) / 16 * 16;
  Elem* ys = reinterpret_cast<Elem*>(dyn_smem);
  Elem* xs = reinterpret_cast<Elem*>(dyn_smem + slice_bytes);
  uint8_t* ss = dyn_smem + 2 * slice_bytes;

  const int64_t clusters = static_cast<int64_t>(gridDim.x) / ctas;
  const bool unit_t = prm.temperature == 1.0f;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) / ctas; row < prm.rows; row += clusters) {
    if (prm.valid && prm.valid[row] == 0) {  // inert: never read, gradients exact +0
      const int64_t off = row * prm.vocab + v0;
      fill_slice(prm.gp ? static_cast<Elem*>(prm.gp) + off : nullptr, n, 0.0f);
      fill_slice(prm.gq ? static_cast<Elem*>(prm.gq) + off : nullptr, n, 0.0f);
      continue;  // uniform across the cluster: no exchange, no barrier
    }
    if (unit_t) process_row<Elem, Policy, true>(prm, row, v0, n, ys, xs, ss, cl, sh.sc, sh.slots, sh.rs);
    else process_row<Elem, Policy, false>(prm, row, v0, n, ys, xs, ss, cl, sh.sc, sh.slots, sh.rs);
    cl.sync();  // every remote read of this row's slots is done before the next row's writes
  }
}

}  // namespace divcheck::cuda

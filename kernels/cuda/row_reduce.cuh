// Row reductions of the logit kernel: inside a CTA of 256 or 512 threads and across the CTAs of
// a thread block cluster (distributed shared memory, DSMEM), all in a fixed order, no atomics.
//
// Inside the CTA every thread writes its partials as one record to shared memory (BlockScratch;
// one or two 16-byte stores), and warp 0 alone combines them: lane l takes the records of
// threads l, l + 32, ..., l + 480 (those that exist), pairwise over that index (4 levels),
// then the 32 lanes by the warp-shuffle tree of reduction_order.hpp (offsets 16..1, 5 levels).
// (The other warps wait at the barrier and issue nothing: a row's reductions cost the SM a few
// instructions per warp instead of a shuffle tree in every warp.) Lane 0 publishes the CTA's
// result in its ClusterSlots, cluster.sync() (release/acquire), and one thread per statistic
// combines the C CTA results by a pairwise tree over the CTA rank (offsets C/2..1), the same in
// every CTA, so every CTA holds bitwise the same row statistic.
//   * float sums: depth log2(16) + 5 + log2 C = 9 + log2 C (a 256-thread CTA's tree is the
//     same with its missing half skipped: depth 8 + log2 C);
//   * max (NaN-propagating) and min: exact in any order;
//   * FixedSum (math/exact_sum.hpp): integer, exact in any order.
// The kernel ends every processed row with one more cluster.sync(), so no slot is overwritten
// while another CTA may still read it, and no CTA exits while its shared memory can be read.
#pragma once

#include <cooperative_groups.h>

#include "kernels/cuda/plan_math.hpp"
#include "kernels/cuda/row_range.cuh"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/hd.hpp"
#include "kernels/math/reduction_order.hpp"
#include "kernels/math/softmax.hpp"

namespace divcheck::cuda {

namespace cg = cooperative_groups;

inline constexpr int kMaxWarps = kRowThreadsMax / 32;  // 16
inline constexpr int kMaxStats = 7;                      // total_variation: |p - q| and six class masses
inline constexpr int kMaxCtas = 16;
static_assert(kMaxStats <= kRecordFloats, "a record holds every statistic");

// The CTA's threads (a plan's choice: 256 or 512, plan_math.hpp).
__device__ __forceinline__ int cta_threads() { return static_cast<int>(blockDim.x); }

// Per-CTA scratch of the reductions: one record per thread (at the start of the dynamic shared
// memory, plan_math.hpp dynamic_bytes).
struct BlockScratch {
  float (*rec)[kRecordFloats];
};

// What one CTA contributes to a row's statistics; read by the other CTAs through DSMEM.
struct ClusterSlots {
  float range[4];  // max y, max x (NaN-propagating), min y, min x
  math::FixedSum fixed[2];
  float sums[kMaxStats];
};

// The row statistics every CTA of the cluster ends up with (bitwise equal in all of them).
struct RowShared {
  float max[2];
  int poison;
  bool tame;       // both sides tame (math::tame_side): the passes take the *_tame forms
  float s[2];      // S of each side (FixedSum value)
  float log_s[2];
  float stats[kMaxStats];
};

__device__ __forceinline__ float warp_tree_sum(float v) {
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) v = v + __shfl_down_sync(0xffffffffu, v, offset);
  return v;  // lane 0 holds the warp's sum in the tree order of reduction_order.hpp
}

// This thread's first N record floats (N a multiple of 4) to shared memory.
template <int N>
__device__ __forceinline__ void put_record(const BlockScratch& sc, const float (&v)[N]) {
  static_assert(N % 4 == 0 && N <= kRecordFloats, "whole 16-byte words");
  float4* d = reinterpret_cast<float4*>(sc.rec[threadIdx.x]);
#pragma unroll
  for (int i = 0; i < N / 4; ++i) d[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
}
template <int N>
__device__ __forceinline__ void get_record(const BlockScratch& sc, int thread, float (&v)[N]) {
  const float4* s = reinterpret_cast<const float4*>(sc.rec[thread]);
#pragma unroll
  for (int i = 0; i < N / 4; ++i) {
    const float4 w = s[i];
    v[4 * i] = w.x;
    v[4 * i + 1] = w.y;
    v[4 * i + 2] = w.z;
    v[4 * i + 3] = w.w;
  }
}

// Warp 0, lane l: the records of threads l + 32 j, j in [j0, j0 + J), combined pairwise over j
// (combine(a, b) updates a); the warps a 256-thread CTA lacks contribute `identity`.
// Depth-first, so at most log2 J partial records are live. The tree has log2 kMaxWarps levels
// for either CTA size.
template <int J, int N, class Combine>
__device__ __forceinline__ void lane_pairwise(const BlockScratch& sc, int lane, int j0, const Combine& combine,
                                              const float (&identity)[N], float (&out)[N]) {
  if constexpr (J == 1) {
    if (32 * j0 < cta_threads()) {
      get_record(sc, lane + 32 * j0, out);
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) out[i] = identity[i];
    }
  } else {
    float b[N];
    lane_pairwise<J / 2>(sc, lane, j0, combine, identity, out);
    if (32 * (j0 + J / 2) >= cta_threads()) return;  // the right half is all identity
    lane_pairwise<J / 2>(sc, lane, j0 + J / 2, combine, identity, b);
    combine(out, b);
  }
}

// The range of each side's logits over the cluster: max (NaN-propagating) and min. Gives the
// row's maxima, the poison flag (docs/semantics.md rule 1: a NaN or +inf logit, or a side with
// no finite logit) and whether both sides are tame (math::tame_side).
__device__ inline void reduce_range(cg::cluster_group& cl, const BlockScratch& sc, ClusterSlots& slots, RowShared& rs,
                                    const float (&range)[4], float temperature) {
  auto combine = [](float (&r)[4], const float (&o)[4]) {
    r[0] = max_nan(r[0], o[0]);
    r[1] = max_nan(r[1], o[1]);
    r[2] = fminf(r[2], o[2]);
    r[3] = fminf(r[3], o[3]);
  };
  put_record(sc, range);
  __syncthreads();
  const int lane = threadIdx.x & 31;
  if (threadIdx.x < 32) {
    constexpr float kIdentity[4] = {-math::kInf, -math::kInf, math::kInf, math::kInf};
    float r[4];
    lane_pairwise<kMaxWarps>(sc, lane, 0, combine, kIdentity, r);
#pragma unroll
    for (int offset = 16; offset >= 1; offset >>= 1) {
      float o[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) o[k] = __shfl_xor_sync(0xffffffffu, r[k], offset);
      combine(r, o);
    }
    if (lane == 0)
#pragma unroll
      for (int k = 0; k < 4; ++k) slots.range[k] = r[k];
  }
  cl.sync();
  if (threadIdx.x == 0) {
    const int ctas = static_cast<int>(cl.num_blocks());
    float r[4] = {-math::kInf, -math::kInf, math::kInf, math::kInf};
    for (int c = 0; c < ctas; ++c) {
      const ClusterSlots* o = cl.map_shared_rank(&slots, c);
      const float v[4] = {o->range[0], o->range[1], o->range[2], o->range[3]};
      combine(r, v);
    }
    const float m0 = r[0], m1 = r[1];  // a NaN max fails every comparison below: poison
    rs.poison = (m0 > -math::kInf && m0 < math::kInf && m1 > -math::kInf && m1 < math::kInf) ? 0 : 1;
    rs.tame = rs.poison == 0 && math::tame_side(r[2], m0, temperature) && math::tame_side(r[3], m1, temperature);
    rs.max[0] = m0;
    rs.max[1] = m1;
  }
  __syncthreads();
}

__device__ __forceinline__ void warp_merge_fixed(math::FixedSum& f) {
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) {
    math::FixedSum o;
    o.lo = __shfl_down_sync(0xffffffffu, f.lo, offset);
    o.hi = __shfl_down_sync(0xffffffffu, f.hi, offset);
    f.merge(o);
  }
}

__device__ __forceinline__ float bits_float(uint32_t b) { return __uint_as_float(b); }
__device__ __forceinline__ uint32_t float_bits(float f) { return __float_as_uint(f); }

// The C CTA sums of statistic k by the pairwise tree over the CTA rank (offsets C/2..1).
// (A runtime loop: unrolled over kMaxCtas, the compiler hoists 16 remote addresses out of the
// row loop and spills them.)
__device__ __forceinline__ float cluster_tree_sum(cg::cluster_group& cl, ClusterSlots& slots, int k) {
  const int ctas = static_cast<int>(cl.num_blocks());
  float v[kMaxCtas];
  for (int r = 0; r < ctas; ++r) v[r] = cl.map_shared_rank(&slots.sums[0], r)[k];
  for (int offset = ctas / 2; offset >= 1; offset /= 2)
    for (int i = 0; i < offset; ++i) v[i] = v[i] + v[i + offset];
  return v[0];
}

// Sums K float partials (K <= kMaxStats) of every thread over the CTA and then the cluster, and,
// with kFixed, the two sides' per-thread fixed-point sums of S in the same exchange (one
// barrier and one cluster.sync). Results: rs.stats[0..K), and with kFixed rs.s, rs.log_s.
// The per-thread fixed sums are plain 64-bit integers (fewer than 2^24 terms of at most 2^40);
// warp 0 adds them into FixedSums with a carry word (exact, any order).
template <int K, bool kFixed>
__device__ void reduce_stats(cg::cluster_group& cl, const BlockScratch& sc, ClusterSlots& slots, RowShared& rs,
                             const float* acc, uint64_t ly = 0, uint64_t lx = 0) {
  constexpr int kOff = kFixed ? 4 : 0;  // the fixed sums take the first 4 record words
  constexpr int kN = (kOff + K + 3) / 4 * 4;
  static_assert(kN <= kRecordFloats, "record too small");
  float mine[kN];
#pragma unroll
  for (int i = 0; i < kN; ++i) mine[i] = 0.0f;
  if constexpr (kFixed) {
    mine[0] = bits_float(static_cast<uint32_t>(ly));
    mine[1] = bits_float(static_cast<uint32_t>(ly >> 32));
    mine[2] = bits_float(static_cast<uint32_t>(lx));
    mine[3] = bits_float(static_cast<uint32_t>(lx >> 32));
  }
#pragma unroll
  for (int k = 0; k < K; ++k) mine[kOff + k] = acc[k];
  put_record(sc, mine);
  __syncthreads();
  if (threadIdx.x < 32) {
    const int lane = static_cast<int>(threadIdx.x);
    math::FixedSum fy, fx;  // this lane's threads' S partials (exact: order-free)
    auto combine = [&](float (&a)[kN], const float (&b)[kN]) {
#pragma unroll
      for (int k = 0; k < K; ++k) a[kOff + k] = a[kOff + k] + b[kOff + k];
      if constexpr (kFixed) {  // fold b's integers into the lane's FixedSums; a keeps its own
        fy.add_fixed((static_cast<uint64_t>(float_bits(b[1])) << 32) | float_bits(b[0]));
        fx.add_fixed((static_cast<uint64_t>(float_bits(b[3])) << 32) | float_bits(b[2]));
      }
    };
    constexpr float kZeros[kN] = {};
    float r[kN];
    lane_pairwise<kMaxWarps>(sc, lane, 0, combine, kZeros, r);
    if constexpr (kFixed) {  // the first record's integers (combine folded every other one)
      fy.add_fixed((static_cast<uint64_t>(float_bits(r[1])) << 32) | float_bits(r[0]));
      fx.add_fixed((static_cast<uint64_t>(float_bits(r[3])) << 32) | float_bits(r[2]));
      warp_merge_fixed(fy);
      warp_merge_fixed(fx);
    }
    float total[K > 0 ? K : 1];
#pragma unroll
    for (int k = 0; k < K; ++k) total[k] = warp_tree_sum(r[kOff + k]);
    if (lane == 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) slots.sums[k] = total[k];
      if constexpr (kFixed) {
        slots.fixed[0] = fy;
        slots.fixed[1] = fx;
      }
    }
  }
  cl.sync();
  const int t = static_cast<int>(threadIdx.x);
  if constexpr (K > 0)
    if (t < K) rs.stats[t] = cluster_tree_sum(cl, slots, t);
  if constexpr (kFixed) {
    if (t >= 32 && t < 34) {  // another warp than the sums' threads
      const int side = t - 32;
      const int ctas = static_cast<int>(cl.num_blocks());
      math::FixedSum total;
      for (int r = 0; r < ctas; ++r) total.merge(cl.map_shared_rank(&slots, r)->fixed[side]);
      const float s = total.value();
      rs.s[side] = s;
      rs.log_s[side] = math::f_log(s);
    }
  }
  __syncthreads();
}

}  // namespace divcheck::cuda

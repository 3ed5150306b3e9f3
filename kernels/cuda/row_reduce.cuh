// Row reductions of the logit kernel: inside a CTA of 512 threads and across the CTAs of a
// thread block cluster (distributed shared memory, DSMEM), all in a fixed order, no atomics.
//
//   * float sums: each thread's partial (logit_rows_kernel.cuh: its chunks' pairwise sums in
//     chunk order) enters a pairwise tree: the warp-shuffle tree of reduction_order.hpp inside
//     each warp (offsets 16..1), then the 16 warp sums the same way (offsets 8..1; the shuffle
//     of offset 16 adds exact zeros), then, with C > 1 CTAs per row, the C CTA sums by a
//     pairwise tree over the CTA rank (offsets C/2..1), the same in every CTA, so every CTA
//     holds bitwise the same row statistic. Depth: 9 + log2 C levels.
//   * max and the poison flag: exact in any order.
//   * FixedSum (math/exact_sum.hpp): integer, exact in any order.
// Each exchange across the cluster writes the CTA's partial into its own ClusterSlots field,
// cluster.sync() (release/acquire), then reads every rank's field remotely. The kernel ends
// every processed row with one more cluster.sync(), so no slot is overwritten while another
// CTA may still read it, and no CTA exits while its shared memory can still be read.
#pragma once

#include <cooperative_groups.h>

#include "kernels/cuda/plan_math.hpp"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/hd.hpp"
#include "kernels/math/reduction_order.hpp"

namespace divcheck::cuda {

namespace cg = cooperative_groups;

inline constexpr int kThreads = kRowThreads;  // 512 (plan_math.hpp)
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kMaxStats = 7;             // total_variation: |p - q| and six class masses
inline constexpr int kMaxCtas = 16;
static_assert(kWarps <= 32 && (kWarps & (kWarps - 1)) == 0, "the second tree level reduces the warp sums in one warp");

// Per-CTA scratch of the reductions.
struct BlockScratch {
  float warp_sums[kMaxStats][kWarps];
  float warp_max[2][kWarps];
  int warp_poison[kWarps];
  math::FixedSum warp_fixed[2][kWarps];
};

// What one CTA contributes to a row's statistics; read by the other CTAs through DSMEM.
struct ClusterSlots {
  float max[2];
  int poison;
  math::FixedSum fixed[2];
  float sums[kMaxStats];
};

// The row statistics every CTA of the cluster ends up with (bitwise equal in all of them).
struct RowShared {
  float max[2];
  int poison;
  float s[2];      // S of each side (FixedSum value)
  float log_s[2];
  float stats[kMaxStats];
};

__device__ __forceinline__ float warp_tree_sum(float v) {
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) v = v + __shfl_down_sync(0xffffffffu, v, offset);
  return v;  // lane 0 holds the warp's sum in the tree order of reduction_order.hpp
}

// Sums K lane accumulators over the CTA and then over the cluster; result in rs.stats[0..K).
template <int K>
__device__ void reduce_sums(cg::cluster_group& cl, BlockScratch& sc, ClusterSlots& slots, RowShared& rs,
                            float (&acc)[K]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const float w = warp_tree_sum(acc[k]);
    if (lane == 0) sc.warp_sums[k][warp] = w;
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const float s = warp_tree_sum(lane < kWarps ? sc.warp_sums[k][lane] : 0.0f);
      if (lane == 0) slots.sums[k] = s;
    }
  }
  cl.sync();
  const int ctas = static_cast<int>(cl.num_blocks());
  if (static_cast<int>(threadIdx.x) < K) {
    const int k = static_cast<int>(threadIdx.x);
    float v[kMaxCtas];
    for (int r = 0; r < ctas; ++r) v[r] = cl.map_shared_rank(&slots.sums[0], r)[k];
    for (int offset = ctas / 2; offset >= 1; offset /= 2)
      for (int i = 0; i < offset; ++i) v[i] = v[i] + v[i + offset];
    rs.stats[k] = v[0];
  }
  __syncthreads();
}

// Max of each side's logits and the poison flag (a NaN or +inf logit), over the cluster.
__device__ inline void reduce_max(cg::cluster_group& cl, BlockScratch& sc, ClusterSlots& slots, RowShared& rs, float my,
                           float mx, bool poison) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int offset = 16; offset >= 1; offset >>= 1) {
    my = fmaxf(my, __shfl_xor_sync(0xffffffffu, my, offset));  // no NaN here: fmaxf dropped them
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
  }
  const int any = __any_sync(0xffffffffu, poison ? 1 : 0);
  if (lane == 0) {
    sc.warp_max[0][warp] = my;
    sc.warp_max[1][warp] = mx;
    sc.warp_poison[warp] = any;
  }
  __syncthreads();
  if (warp == 0) {
    my = lane < kWarps ? sc.warp_max[0][lane] : -math::kInf;
    mx = lane < kWarps ? sc.warp_max[1][lane] : -math::kInf;
    const int p = __any_sync(0xffffffffu, lane < kWarps && sc.warp_poison[lane] != 0 ? 1 : 0);
#pragma unroll
    for (int offset = 16; offset >= 1; offset >>= 1) {
      my = fmaxf(my, __shfl_xor_sync(0xffffffffu, my, offset));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
    }
    if (lane == 0) {
      slots.max[0] = my;
      slots.max[1] = mx;
      slots.poison = p;
    }
  }
  cl.sync();
  if (threadIdx.x == 0) {
    const int ctas = static_cast<int>(cl.num_blocks());
    float m0 = -math::kInf, m1 = -math::kInf;
    int p = 0;
    for (int r = 0; r < ctas; ++r) {
      const ClusterSlots* o = cl.map_shared_rank(&slots, r);
      m0 = fmaxf(m0, o->max[0]);
      m1 = fmaxf(m1, o->max[1]);
      p |= o->poison;
    }
    // docs/semantics.md rule 1: a NaN or +inf logit (the max is then +inf), or a side with no
    // finite logit, poisons the row.
    rs.poison = (p != 0 || m0 == -math::kInf || m1 == -math::kInf || m0 == math::kInf || m1 == math::kInf) ? 1 : 0;
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

// The softmax normalisers S of both sides (exact integer sums), their float values and logs.
__device__ inline void reduce_fixed(cg::cluster_group& cl, BlockScratch& sc, ClusterSlots& slots, RowShared& rs,
                             math::FixedSum fy, math::FixedSum fx) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  warp_merge_fixed(fy);
  warp_merge_fixed(fx);
  if (lane == 0) {
    sc.warp_fixed[0][warp] = fy;
    sc.warp_fixed[1][warp] = fx;
  }
  __syncthreads();
  if (warp == 0) {
    math::FixedSum a, b;
    if (lane < kWarps) {
      a = sc.warp_fixed[0][lane];
      b = sc.warp_fixed[1][lane];
    }
    warp_merge_fixed(a);
    warp_merge_fixed(b);
    if (lane == 0) {
      slots.fixed[0] = a;
      slots.fixed[1] = b;
    }
  }
  cl.sync();
  if (threadIdx.x < 2) {
    const int side = static_cast<int>(threadIdx.x);
    const int ctas = static_cast<int>(cl.num_blocks());
    math::FixedSum total;
    for (int r = 0; r < ctas; ++r) total.merge(cl.map_shared_rank(&slots, r)->fixed[side]);
    const float s = total.value();
    rs.s[side] = s;
    rs.log_s[side] = math::f_log(s);
  }
  __syncthreads();
}

}  // namespace divcheck::cuda

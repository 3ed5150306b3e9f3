// The arithmetic behind the logit kernel's plan (kernels/cuda/plan_math.hpp) at the benchmark
// shapes, with the H100/H200 shared memory of 228 KB per SM (233472 bytes, 1 KB of it reserved
// per CTA) and 227 KB opt-in per CTA, less the kernel's static shared memory (the mailboxes of
// the row exchanges and the row statistics, at most kStatic bytes: logit_rows_kernel.cuh asserts
// it; the reduction records are dynamic, 32 bytes per thread): 256-thread CTAs with the
// smallest cluster whose slices fit three per SM, else two per SM, else one 512-thread CTA.
#include <gtest/gtest.h>

#include <iostream>
#include <type_traits>

#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/plan_math.hpp"
#include "kernels/cuda/row_kernel_choice.cuh"
#include "kernels/cuda/stream_plan.hpp"
#include "kernels/cuda/workspace.hpp"
#include "reference/real_engine.hpp"

namespace divcheck::cuda {
namespace {

constexpr std::size_t kStatic = kRowStaticSharedMax;
constexpr std::size_t kThreePerSm = (233472 - 3 * 1024) / 3 - kStatic;
constexpr std::size_t kTwoPerSm = (233472 - 2 * 1024) / 2 - kStatic;
constexpr std::size_t kOnePerSm = 232448 - kStatic;

// The smallest power-of-two CTA count <= 16 whose staged CTAs of `threads` fit `budget`, or 0.
int smallest_fitting(std::int64_t vocab, std::size_t elem, int threads, std::size_t budget) {
  for (int c : {1, 2, 4, 8, 16})
    if (dynamic_bytes(threads, true, slice_for(vocab, c), elem, false) <= budget) return c;
  return 0;
}

// The workspace holds a message per CTA of the largest cluster a plan uses and per tile of the
// streamed kernel's longest row (the deferred forward-only rows, LogitWorkspace::messages_of);
// the streamed rows' messages sit at the power-of-two stride >= their tiles.
static_assert(LogitWorkspace::kMessageCtas == (kMaxClusterCtas > kMaxStreamTiles ? kMaxClusterCtas : kMaxStreamTiles),
              "one message slot per CTA of the largest cluster and per tile of the longest streamed row");
static_assert((kMaxStreamTiles & (kMaxStreamTiles - 1)) == 0 && kMaxStreamTiles <= 32,
              "the stride of kMaxStreamTiles tiles is kMaxStreamTiles, one lane of the combining warp each");

TEST(PlanMath, SlicesAreWholeChunksCoveringTheRow) {
  for (std::int64_t v : {1, 7, 8, 9, 1023, 1024, 1025, 4099, 128256, 256000})
    for (int c : {1, 2, 4, 8, 16}) {
      const std::int64_t w = slice_for(v, c);
      EXPECT_EQ(w % kChunkColumns, 0) << v << " " << c;
      EXPECT_GE(w * c, v) << v << " " << c;
      // no more than one chunk per CTA to spare beyond the even split
      EXPECT_LT(w * c - v, static_cast<std::int64_t>(c) * kChunkColumns) << v << " " << c;
    }
  EXPECT_EQ(slice_for(128256, 8), 16032);
  EXPECT_EQ(staged_bytes(1024, 2, false), 4096u);
  EXPECT_EQ(staged_bytes(1024, 4, true), 2u * 4096u + 1024u);
  EXPECT_EQ(staged_bytes(8, 2, true), 2u * 16u + 16u);
}

TEST(PlanMath, BenchmarkShapesStageThree256ThreadCtasPerSmExceptF32At256000) {
  EXPECT_EQ(record_bytes(256), 8192u);
  EXPECT_EQ(smallest_fitting(128256, 2, 256, kThreePerSm), 8);   // bf16: 2 x 2 x 16032 + 8 KB = 72 KB per CTA
  EXPECT_EQ(smallest_fitting(128256, 4, 256, kThreePerSm), 16);  // f32:  2 x 4 x 8016 + 8 KB
  EXPECT_EQ(smallest_fitting(256000, 2, 256, kThreePerSm), 16);  // bf16: 2 x 2 x 16000 + 8 KB
  EXPECT_EQ(smallest_fitting(256000, 4, 256, kThreePerSm), 0);   // f32:  2 x 4 x 16000 = 128 KB with C = 16
  EXPECT_EQ(smallest_fitting(256000, 4, 256, kTwoPerSm), 0);
  EXPECT_EQ(smallest_fitting(256000, 4, 512, kOnePerSm), 16);    //       one 512-thread CTA per SM
}

// The partly staged plan (partial_stage_columns): the most columns, a multiple of 32 chunks and
// below the slice, whose staged bytes with the records fit the limit; at the f32 4096x256000
// benchmark shape with 16 x 256 threads, 13056 of 16000 columns for two CTAs per SM (82%) and
// 8192 for three (51%); bf16 with 8 CTAs (32000 columns of 2 bytes) 26368 for two; f32 8192x128256
// with 8 x 256 (16032 columns, the automatic plan since step 62) 13056 for two (81%), 8192 for
// three (51%).
TEST(PlanMath, PartlyStagedColumnsAreTheMostWholeWarpChunksThatFit) {
  constexpr std::int64_t step = kPartialStageChunks * kChunkColumns;
  EXPECT_EQ(step, 256);
  for (std::size_t elem : {2u, 4u})
    for (bool support : {false, true})
      for (std::int64_t slice : {256, 2048, 8016, 16000, 32000, 65536})
        for (std::size_t limit : {kThreePerSm, kTwoPerSm, std::size_t{20000}, std::size_t{9000}}) {
          const std::int64_t k = partial_stage_columns(limit, 256, slice, elem, support);
          SCOPED_TRACE(std::to_string(elem) + " " + std::to_string(slice) + " " + std::to_string(limit));
          EXPECT_EQ(k % step, 0);
          EXPECT_GE(k, 0);
          EXPECT_LT(k, slice);
          if (k > 0) EXPECT_LE(dynamic_bytes(256, true, slice, elem, support, k), limit);
          if (k + step < slice) EXPECT_GT(dynamic_bytes(256, true, slice, elem, support, k + step), limit);
          // The support bytes stay whole: they count the slice, not K.
          EXPECT_EQ(staged_bytes(slice, elem, support, k) - staged_bytes(slice, elem, false, k),
                    support ? static_cast<std::size_t>((slice + 15) / 16 * 16) : 0u);
        }
  EXPECT_EQ(partial_stage_columns(kTwoPerSm, 256, slice_for(256000, 16), 4, false), 13056);
  EXPECT_EQ(partial_stage_columns(kThreePerSm, 256, slice_for(256000, 16), 4, false), 8192);
  EXPECT_EQ(partial_stage_columns(kTwoPerSm, 256, slice_for(256000, 8), 2, false), 26368);
  EXPECT_EQ(partial_stage_columns(kTwoPerSm, 256, slice_for(128256, 8), 4, false), 13056);
  EXPECT_EQ(partial_stage_columns(kThreePerSm, 256, slice_for(128256, 8), 4, false), 8192);
  EXPECT_EQ(dynamic_bytes(256, true, 16000, 4, false, 16000), dynamic_bytes(256, true, 16000, 4, false));
}

// The rounding depth of a row sum of the one-pass rows' single exchange (row_reduce.cuh
// reduce_one_exchange; docs/tolerances.md, "One exchange"), for V columns, C CTAs of N threads:
// a chunk's 8 terms pairwise (3), the thread's chunks in order (ceil(W / 8N)); then three stages
// (warp, CTA, cluster), each a rescale to the stage's maxima (2: the policy sums' shift and
// factor; S has 1) and a tree over the parts that hold columns (threads 0 .. min(N, chunks) - 1,
// their warps, CTAs 0 .. k - 1: the others add exact zeros); a stage with one part holding
// columns rescales by f = 1, d = 0 (exact) and adds only zeros.
int ceil_log2(std::int64_t x) {
  int d = 0;
  while ((std::int64_t{1} << d) < x) ++d;
  return d;
}
int one_exchange_depth(std::int64_t vocab, int ctas, int threads) {
  const std::int64_t w = slice_for(vocab, ctas);
  const std::int64_t chunks = w / kChunkColumns;
  const std::int64_t holding_threads = std::min<std::int64_t>(threads, chunks);
  const std::int64_t holding_warps = (holding_threads + 31) / 32;
  const std::int64_t holding_ctas = (vocab + w - 1) / w;
  int d = 3 + static_cast<int>((chunks + threads - 1) / threads);
  auto stage = [&](std::int64_t parts) { return parts > 1 ? 2 + ceil_log2(parts) : 0; };
  d += stage(std::min<std::int64_t>(holding_threads, 32)) + stage(holding_warps) + stage(holding_ctas);
  return d;
}

// Every plan the launcher can run (N = 128, 256, 512; C = 1..16) keeps that depth within the
// tolerance model's sigma(V) (reference/real_engine.hpp ref::summation_depth_of), so the verdict bound
// covers the rescaled sums; at the benchmark shapes with room to spare.
TEST(PlanMath, OneExchangeDepthIsWithinSigmaForEveryPlan) {
  std::vector<std::int64_t> vocabs;
  for (std::int64_t v = 1; v <= 20000; ++v) vocabs.push_back(v);
  for (std::int64_t v = 20000; v <= 600000; v += 97) vocabs.push_back(v);
  int checked = 0;
  for (int n : {128, 256, 512})
    for (int c : {1, 2, 4, 8, 16})
      for (std::int64_t v : vocabs) {
        const int d = one_exchange_depth(v, c, n);
        ASSERT_LE(d, ref::summation_depth_of(v)) << "V " << v << " C " << c << " N " << n;
        ++checked;
      }
  EXPECT_EQ(checked, 15 * static_cast<int>(vocabs.size()));
  // The benchmark plan of bf16 128256 (C = 8, N = 256): W = 16032 columns = 2004 chunks per CTA,
  // so a chunk's pairwise 3, ceil(2004 / 256) = 8 chunks per thread, then the warp stage (2 + log2
  // of 32 lanes), the CTA stage (2 + log2 of 8 warps) and the cluster stage (2 + log2 of 8 CTAs).
  EXPECT_EQ(one_exchange_depth(128256, 8, 256), 3 + 8 + (2 + 5) + (2 + 3) + (2 + 3));
  // sigma(V) = ceil(V / 1024) + 16 (docs/tolerances.md) = 126 + 16: 28 of 142 used.
  EXPECT_EQ(ref::summation_depth_of(128256), 126.0 + 16.0);
}

// The streamed kernel's depth (stream_rows_kernel.cuh): a chunk's pairwise 3, the group's
// chunks in order (at most R), 3 per merge of the thread's G group partials (the rescale's two
// levels and the addition; the columns short of a whole group are one more partial), then the
// warp stage and the CTA stage of its tile as above, and the combine's tree over the tiles.
int streamed_depth(const LogitPlan& p, std::int64_t vocab, std::size_t elem) {
  const int r = stream_chunks(elem);
  const std::int64_t group = static_cast<std::int64_t>(p.threads) * r * kChunkColumns;
  const std::int64_t w = std::min(p.slice, vocab);  // the columns of the widest tile
  const std::int64_t parts = (w + group - 1) / group;  // whole groups, and the rest as one more
  const std::int64_t chunks_in_group = (std::min(group, w) + kChunkColumns - 1) / kChunkColumns;
  const std::int64_t holding_threads = std::min<std::int64_t>(p.threads, chunks_in_group);
  const std::int64_t holding_warps = (holding_threads + 31) / 32;
  const int d = 3 + static_cast<int>((chunks_in_group + p.threads - 1) / p.threads) + 3 * static_cast<int>(parts - 1);
  auto stage = [&](std::int64_t n) { return n > 1 ? 2 + ceil_log2(n) : 0; };
  return d + stage(std::min<std::int64_t>(holding_threads, 32)) + stage(holding_warps) + stage(p.ctas);
}

// Every streamed plan (forward only and with gradients; N = 128, 256, 512; 16-bit and float; G
// automatic, 1 and 8) keeps its depth within sigma(V), for V up to 600000 and at the largest V
// (2^31 - 1, where G grows so that a row has at most kMaxStreamTiles tiles); a forced G whose
// merges would pass sigma(V) (short rows) is refused, naming stream_groups, exactly where this
// depth says so.
TEST(PlanMath, StreamedDepthIsWithinSigmaForEveryStreamedPlan) {
  int checked = 0, refused = 0, lowered = 0;
  LogitArgs a;  // KL, plain, T = 1: forward only (deferred), or with gradients
  static char buffer;
  for (bool grads : {false, true}) {
    for (FloatKind dt : {FloatKind::bf16, FloatKind::f32})
      for (int n : {128, 256, 512})
        for (int g : {0, 1, 8}) {
          a.grad_p = grads ? &buffer : nullptr;
          a.stream_rows = grads ? 2 : 0;  // (with gradients only where forced)
          const int automatic = grads ? stream_grad_groups(float_kind_size(dt)) : kStreamGroups;
          a.dtype = dt;
          a.row_threads = n;
          a.stream_groups = g;
          std::vector<std::int64_t> vocabs;
          for (std::int64_t v = 1; v <= 20000; v += 7) vocabs.push_back(v);
          for (std::int64_t v = 20000; v <= 600000; v += 97) vocabs.push_back(v);
          vocabs.push_back(std::int64_t{2147483647});
          for (std::int64_t v : vocabs) {
            a.vocab = v;
            const std::int64_t group = std::int64_t{n} * stream_chunks(float_kind_size(dt)) * kChunkColumns;
            LogitPlan forced;  // the plan of the requested G (above the fewest groups per tile)
            forced.threads = n;
            const std::int64_t fewest = (v + group * kMaxStreamTiles - 1) / (group * kMaxStreamTiles);
            forced.slice = group * std::max<std::int64_t>(g != 0 ? g : automatic, fewest);
            forced.ctas = static_cast<int>((v + forced.slice - 1) / forced.slice);
            const bool too_deep = streamed_depth(forced, v, float_kind_size(dt)) > ref::summation_depth_of(v);
            if (g != 0 && too_deep) {
              try {
                (void)stream_plan(a);
                ADD_FAILURE() << "G " << g << " accepted at V " << v;
              } catch (const InvalidArgument& e) {
                EXPECT_EQ(e.argument(), "stream_groups");
              }
              ++refused;
              continue;
            }
            const LogitPlan p = stream_plan(a);
            if (g == 0) lowered += p.slice < forced.slice;
            if (g != 0 || !too_deep) {
              ASSERT_EQ(p.slice, forced.slice) << "V " << v;
            }
            ASSERT_TRUE(p.streamed);
            ASSERT_LE(p.ctas, kMaxStreamTiles) << "V " << v;
            ASSERT_GE(p.slice * p.ctas, v);
            ASSERT_LE(streamed_depth(p, v, float_kind_size(dt)), ref::summation_depth_of(v))
                << "V " << v << " N " << n << " G " << g;
            ++checked;
          }
        }
  }
  EXPECT_GT(checked, 2 * 18 * 8000);
  EXPECT_GT(refused, 0);  // G = 8 on short rows
  EXPECT_GT(lowered, 0);  // the automatic G on short rows
  std::cout << "[ streamed plans ] " << checked << " within sigma(V), " << lowered << " with the automatic G lowered, "
            << refused << " forced G refused\n";
  // bf16 128256 on the automatic plan (N = 256, groups of 8192 columns, G = 4: tiles of 32768, 4
  // per row): 3 + 4 chunks, 3 merges (3 x 3: the last tile's 3 whole groups and its rest), the
  // warp stage (2 + 5), the CTA stage (2 + log2 of 8 warps) and the tiles' (2 + log2 of 4):
  // 32 of sigma's 142.
  a.dtype = FloatKind::bf16;
  a.grad_p = nullptr;
  a.stream_rows = 0;
  a.row_threads = 0;
  a.stream_groups = 0;
  a.vocab = 128256;  // (stream_rows 2)
  EXPECT_EQ(streamed_depth(stream_plan(a), 128256, 2), 3 + 4 + 3 * 3 + (2 + 5) + (2 + 3) + (2 + 2));
}

// When a launch takes the streamed plan (stream_plan.hpp) and its tiles.
TEST(StreamPlan, TakesTheDeferredLaunchesAndForcedOnesWithGradients) {
  LogitArgs a;  // forward-only KL on the plain path at T = 1: deferred
  a.kind = LogitKind::kl;
  a.batch = 8;
  a.seq = 1024;
  a.vocab = 128256;
  for (FloatKind dt : {FloatKind::bf16, FloatKind::f16, FloatKind::f32}) {
    a.dtype = dt;
    const LogitPlan p = stream_plan(a);  // automatic
    ASSERT_TRUE(p.streamed);
    EXPECT_EQ(p.registers, dt == FloatKind::f32 ? 64 : 80);
    EXPECT_EQ(p.slice, 4 * 8192);  // G = 4 groups of 256 x 4 x 8 (16-bit), 512 x 2 x 8 (float)
    EXPECT_EQ(p.threads, dt == FloatKind::f32 ? 512 : 256);
    EXPECT_EQ(p.ctas, 4);          // ceil(128256 / 32768)
    EXPECT_FALSE(p.staged);
    EXPECT_FALSE(p.persistent);
  }
  EXPECT_EQ(stream_stride(16), 16u);
  EXPECT_EQ(stream_stride(17), 32u);
  EXPECT_EQ(stream_stride(1), 1u);
  a.dtype = FloatKind::bf16;
  a.vocab = 256000;
  EXPECT_EQ(stream_plan(a).ctas, 8);
  a.stream_groups = 1;
  EXPECT_EQ(stream_plan(a).ctas, 32);  // 31.25 groups -> 32 tiles of one group, the most
  a.vocab = 32 * 8192 + 1;             // one column more: G rises to 2
  EXPECT_EQ(stream_plan(a).ctas, 17);
  EXPECT_EQ(stream_plan(a).slice, 2 * 8192);
  a.stream_groups = 0;
  a.row_threads = 128;  // forced threads: groups of 128 x 4 x 8 columns
  a.vocab = 3001;
  EXPECT_EQ(stream_plan(a).ctas, 1);
  EXPECT_EQ(stream_plan(a).slice, 4 * 4096);
  a.row_threads = 0;
  // Not where anything of the cluster kernel's plan is forced, or the launch is not deferred.
  ASSERT_TRUE(stream_plan(a).streamed);
  LogitArgs b = a;
  b.stream_registers = 64;  // the knob
  EXPECT_EQ(stream_plan(b).registers, 64);
  b = a;
  b.cluster_ctas = 4;
  EXPECT_FALSE(stream_plan(b).streamed);
  b.stream_rows = 2;
  try {
    (void)stream_plan(b);
    ADD_FAILURE() << "stream_rows 2 accepted with a forced cluster size";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "stream_rows");
  }
  b = a;
  b.row_grid = 1;
  EXPECT_FALSE(stream_plan(b).streamed);
  b.stream_rows = 2;  // forced: the row grid does not apply to it
  EXPECT_TRUE(stream_plan(b).streamed);
  b = a;
  b.allow_staging = false;
  EXPECT_FALSE(stream_plan(b).streamed);
  b = a;
  b.stream_rows = 1;
  EXPECT_FALSE(stream_plan(b).streamed);
  for (int k = 0; k < 4; ++k) {
    b = a;
    if (k == 0) b.kind = LogitKind::jensen_shannon;
    if (k == 1) b.temperature = 1e38;        // 1/T not a normal float: the dividing kernels
    if (k == 2) b.prob_path = true;
    if (k == 3) b.kind = LogitKind::jefferys, b.temperature = 0.25;  // Jefferys by the reciprocal
    EXPECT_FALSE(defers_row_loss(b)) << k;
    EXPECT_FALSE(centred_forward_launch(b)) << k;
    EXPECT_FALSE(stream_plan(b).streamed) << k;
    b.stream_rows = 2;
    EXPECT_THROW((void)stream_plan(b), InvalidArgument) << k;
  }
  // Forward-only Jefferys on the log-softmax path without a support mask at T = 1 and T = 2^k:
  // not deferred (no cluster kernel of its own), but streamed by centred records.
  for (double t : {1.0, 2.0}) {
    b = a;
    b.kind = LogitKind::jefferys;
    b.temperature = t;
    EXPECT_FALSE(defers_row_loss(b)) << t;
    EXPECT_TRUE(centred_forward_launch(b)) << t;
    EXPECT_TRUE(stream_plan(b).streamed) << t;
    // masked_jefferys_divergence at its default log_target = False: the probability path, which
    // has kernels at T = 1 only (RowPaths::prob_unit_t): centred there, the general path elsewhere.
    b.prob_path = true;
    EXPECT_EQ(centred_forward_launch(b), t == 1.0) << t;
    EXPECT_EQ(stream_plan(b).streamed, t == 1.0) << t;
    EXPECT_EQ(row_paths(b), t == 1.0 ? RowPaths::prob_unit_t : RowPaths::general) << t;
    static char gradient_marker;
    b.grad_p = b.grad_q = &gradient_marker;  // with gradients: the cluster kernel
    EXPECT_FALSE(centred_forward_launch(b)) << t;
    EXPECT_FALSE(stream_plan(b).streamed) << t;
  }
  // Forward-only squared Hellinger on the log-softmax path without a support mask (T = 1, the only
  // temperature its row has): streamed by centred records; with a support mask or with gradients not.
  b = a;
  b.kind = LogitKind::hellinger;
  EXPECT_FALSE(defers_row_loss(b));
  EXPECT_TRUE(centred_forward_launch(b));
  EXPECT_TRUE(stream_plan(b).streamed);
  {
    static const std::uint8_t support_marker = 1;
    LogitArgs s = b;
    s.support = &support_marker;
    EXPECT_FALSE(centred_forward_launch(s));
    EXPECT_FALSE(stream_plan(s).streamed);
    static char gradient_marker;
    s = b;
    s.grad_q = &gradient_marker;
    EXPECT_FALSE(centred_forward_launch(s));
    EXPECT_FALSE(stream_plan(s).streamed);
  }
  // With gradients: not deferred, and the automatic plan is the cluster kernel's (the streamed
  // kernel with gradients was slower: bench/RESULTS.md step 56); forced (stream_rows 2), the
  // streamed kernel with gradients (stream_grad_rows_kernel.cuh), with fewer groups per tile
  // (stream_grad_groups: 2 for 16-bit, 1 for float).
  static char buffer;
  b = a;
  b.vocab = 128256;
  b.grad_q = &buffer;
  EXPECT_FALSE(defers_row_loss(b));
  EXPECT_TRUE(one_pass_row_launch(b));
  EXPECT_FALSE(stream_plan(b).streamed);
  b.stream_rows = 2;
  for (FloatKind dt : {FloatKind::bf16, FloatKind::f16, FloatKind::f32}) {
    b.dtype = dt;
    const LogitPlan p = stream_plan(b);
    ASSERT_TRUE(p.streamed);
    EXPECT_EQ(p.slice, (dt == FloatKind::f32 ? 1 : 2) * 8192);
    EXPECT_EQ(p.ctas, dt == FloatKind::f32 ? 16 : 8);  // ceil(128256 / 8192), ceil(128256 / 16384)
    EXPECT_EQ(p.registers, dt == FloatKind::f32 ? 64 : 80);
  }
  b.vocab = 256000;
  EXPECT_EQ(stream_plan(b).ctas, 32);  // float: 31.25 groups -> 32 tiles of one group
  b.dtype = FloatKind::bf16;
  EXPECT_EQ(stream_plan(b).ctas, 16);
  b.kind = LogitKind::jefferys;  // not a one-pass row
  EXPECT_THROW((void)stream_plan(b), InvalidArgument);
  b.stream_rows = 0;
  EXPECT_FALSE(stream_plan(b).streamed);
  b = a;
  b.temperature = 0.5;  // KL at T = 2^k: deferred, streamed
  EXPECT_TRUE(stream_plan(b).streamed);
  b.temperature = 3.0;  // KL by the reciprocal: deferred, streamed
  EXPECT_TRUE(stream_plan(b).streamed);
  b.temperature = 1e38;  // 1/T not a normal float: divided, not deferred
  EXPECT_FALSE(stream_plan(b).streamed);
  b.temperature = 0.5;
  b.kind = LogitKind::cross_entropy;  // cross-entropy has no temperature kernels: not deferred
  EXPECT_FALSE(stream_plan(b).streamed);
}

// The kernel instantiation of a launch (row_variant, row_paths): forward only, KL and
// cross-entropy on the plain path at T = 1 (and KL at any other T with a normal reciprocal) defer
// their rows, every other forward-only launch runs the loss-only kernel; with gradients the full
// kernel; each for the launch's path set (plain at T = 1; plain at T = 2^k, and plain by the
// reciprocal at another T whose reciprocal is a normal float, for KL and Jefferys, the policies
// of the temperature rows; plain by division at any other T; the probability path at T = 1 for
// KL and Jefferys, the policies of the rows with log_target; or general: a support mask, or the
// probability path elsewhere).
// And the kernel table (row_kernel_choice.cuh) has an instantiation for every such launch.
TEST(RowVariant, PicksTheKernelOfTheLaunch) {
  static char buffer;
  int pow2 = 0, recip = 0, prob = 0, tables = 0, centred = 0;
  for (LogitKind k : {LogitKind::kl, LogitKind::jefferys, LogitKind::cross_entropy, LogitKind::jensen_shannon,
                      LogitKind::hellinger, LogitKind::total_variation})
    // plain, support mask, probability path, T = 2, both at T = 2, T = 0.25, T = 3, T = 1e38
    // (1/T is not a normal float)
    for (int path = 0; path < 8; ++path)
      for (bool gradients : {false, true}) {
        LogitArgs a;
        a.kind = k;
        if (path == 1) a.support = reinterpret_cast<const std::uint8_t*>(&buffer);
        if (path == 2 || path == 4) a.prob_path = true;
        if (path == 3 || path == 4) a.temperature = 2.0;
        if (path == 5) a.temperature = 0.25;
        if (path == 6) a.temperature = 3.0;
        if (path == 7) a.temperature = 1e38;
        if (gradients) a.grad_p = a.grad_q = &buffer;
        const bool one_pass = k == LogitKind::kl || k == LogitKind::cross_entropy;
        const bool temperature_policy = k == LogitKind::kl || k == LogitKind::jefferys;
        const bool log_target_policy = k == LogitKind::kl || k == LogitKind::jefferys;
        RowPaths want_paths = RowPaths::general;
        if (path == 0) want_paths = RowPaths::plain_unit_t;
        if (path == 2 && log_target_policy) want_paths = RowPaths::prob_unit_t;
        if (path == 3) want_paths = temperature_policy ? RowPaths::plain_pow2_t : RowPaths::plain_scaled_t;
        // T = 2^k below 2 (and above 2^62) takes the reciprocal's kernels (math::folds_into_one_pass_sums)
        if (path == 5 || path == 6) want_paths = temperature_policy ? RowPaths::plain_recip_t : RowPaths::plain_scaled_t;
        if (path == 7) want_paths = RowPaths::plain_scaled_t;
        const bool temperature_paths = want_paths == RowPaths::plain_pow2_t || want_paths == RowPaths::plain_recip_t;
        RowVariant want = RowVariant::full;
        if (!gradients) {
          const bool defers = (one_pass && path == 0) || (k == LogitKind::kl && temperature_paths);
          want = defers ? RowVariant::deferred : RowVariant::loss_only;
        }
        SCOPED_TRACE("kind " + std::to_string(static_cast<int>(k)) + ", path " + std::to_string(path) +
                     (gradients ? ", gradients" : ", forward only"));
        EXPECT_EQ(row_variant(a), want);
        EXPECT_EQ(row_paths(a), want_paths);
        EXPECT_EQ(defers_row_loss(a), want == RowVariant::deferred);
        pow2 += row_paths(a) == RowPaths::plain_pow2_t;
        recip += row_paths(a) == RowPaths::plain_recip_t;
        prob += row_paths(a) == RowPaths::prob_unit_t;
        // The table has the kernel: the visitor is called once with the launch's template arguments.
        int calls = 0;
        visit_row_kernel(k, row_variant(a), row_paths(a), [&]<class Policy, bool kDeferred, RowPaths kPaths>() {
          ++calls;
          EXPECT_EQ(kDeferred, want == RowVariant::deferred);
          EXPECT_EQ(kIsLossOnly<Policy>, want == RowVariant::loss_only);
          // Loss-only kernels carry every path but plain_pow2_t, plain_recip_t and prob_unit_t; the
          // others exactly the launch's.
          const bool all = want == RowVariant::loss_only && !temperature_paths && want_paths != RowPaths::prob_unit_t;
          EXPECT_EQ(kPaths, all ? RowPaths::all : want_paths);
        });
        EXPECT_EQ(calls, 1);
        tables += calls;
        // The combine step exists exactly for deferred launches, with the kernel's temperature form.
        if (want == RowVariant::deferred) {
          visit_combine_kernel(a, [&]<class Policy, TempForm kT>() {
            EXPECT_EQ(kT, want_paths == RowPaths::plain_pow2_t    ? TempForm::power_of_two
                          : want_paths == RowPaths::plain_recip_t ? TempForm::reciprocal
                                                                  : TempForm::unit);
            EXPECT_EQ((std::is_same_v<Policy, KlPolicy>), k == LogitKind::kl);
          });
        } else if (centred_forward_launch(a)) {
          // forward-only Jefferys at T = 1 or 2^k or on the probability path, Hellinger at T = 1:
          // centred records
          EXPECT_EQ(want, RowVariant::loss_only);
          EXPECT_TRUE((k == LogitKind::jefferys && (path == 0 || path == 2 || path == 3)) ||
                      (k == LogitKind::hellinger && path == 0));
          ++centred;
          visit_combine_kernel(a, [&]<class Policy, TempForm kT>() {
            EXPECT_EQ(kT, want_paths == RowPaths::plain_pow2_t ? TempForm::power_of_two : TempForm::unit);
            EXPECT_EQ((std::is_same_v<Policy, HellingerCentredPolicy>), k == LogitKind::hellinger);
            EXPECT_EQ((std::is_same_v<Policy, JefferysCentredPolicy>), k == LogitKind::jefferys);
          });
        } else {
          EXPECT_THROW(visit_combine_kernel(a, [&]<class, TempForm>() {}), InvalidArgument);
        }
      }
  EXPECT_EQ(pow2, 2 * 2);       // KL and Jefferys at T = 2 x with and without gradients
  EXPECT_EQ(recip, 2 * 2 * 2);  // KL and Jefferys at T = 0.25, 3 x with and without gradients
  EXPECT_EQ(prob, 2 * 2);      // KL and Jefferys on the probability path at T = 1 x with and without gradients
  EXPECT_EQ(tables, 6 * 8 * 2);
  EXPECT_EQ(centred, 3 + 1);  // forward only: Jefferys plain, probability path, T = 2; Hellinger plain
  // Combinations no launch takes are refused with the argument named.
  EXPECT_THROW(visit_row_kernel(LogitKind::cross_entropy, RowVariant::full, RowPaths::plain_pow2_t, [&]<class, bool, RowPaths>() {}),
               InvalidArgument);
  EXPECT_THROW(visit_row_kernel(LogitKind::kl, RowVariant::loss_only, RowPaths::plain_pow2_t, [&]<class, bool, RowPaths>() {}),
               InvalidArgument);
  EXPECT_THROW(visit_row_kernel(LogitKind::kl, RowVariant::loss_only, RowPaths::plain_recip_t, [&]<class, bool, RowPaths>() {}),
               InvalidArgument);
  EXPECT_THROW(visit_row_kernel(LogitKind::hellinger, RowVariant::full, RowPaths::plain_recip_t, [&]<class, bool, RowPaths>() {}),
               InvalidArgument);
  EXPECT_THROW(visit_row_kernel(LogitKind::jefferys, RowVariant::deferred, RowPaths::plain_unit_t, [&]<class, bool, RowPaths>() {}),
               InvalidArgument);
  EXPECT_THROW(visit_row_kernel(LogitKind::kl, RowVariant::full, RowPaths::all, [&]<class, bool, RowPaths>() {}),
               InvalidArgument);
  EXPECT_THROW(visit_row_kernel(LogitKind::jensen_shannon, RowVariant::loss_only, RowPaths::prob_unit_t,
                                [&]<class, bool, RowPaths>() {}),
               InvalidArgument);
  LogitArgs one_gradient;  // one gradient wanted is a launch with gradients
  one_gradient.grad_q = &buffer;
  EXPECT_EQ(row_variant(one_gradient), RowVariant::full);
  one_gradient.temperature = 1.0000001;  // T != 1 as a float: the kernel's own test
  EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_recip_t);  // (LogitArgs' default kind is KL)
  one_gradient.temperature = 1.00000001;  // rounds to 1.0f: the kernel sees T = 1
  EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_unit_t);
  one_gradient.temperature = 2.0000001;  // rounds to 2.0f: the power-of-two kernel
  EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_pow2_t);
  one_gradient.temperature = std::ldexp(1.0, 62);  // the largest power of two the pow2 kernels fold
  EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_pow2_t);
  one_gradient.pow2_kernels = false;  // the A/B's and the tests' way to the reciprocal's kernels
  EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_recip_t);
  one_gradient.pow2_kernels = true;
  for (int e : {63, 126, -1, -126}) {  // powers of two outside 2 .. 2^62: the reciprocal's (exact)
    one_gradient.temperature = std::ldexp(1.0, e);
    EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_recip_t) << "T = 2^" << e;
  }
  one_gradient.temperature = std::ldexp(1.0, 127);  // 2^-127 is not a normal float: division
  EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_scaled_t);
  one_gradient.temperature = 8.6e37;  // 1/T just below FLT_MIN: division
  EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_scaled_t);
  one_gradient.temperature = 2.5e-39;  // 1/T above FLT_MAX (infinite): division
  EXPECT_EQ(row_paths(one_gradient), RowPaths::plain_scaled_t);
}

}  // namespace
}  // namespace divcheck::cuda

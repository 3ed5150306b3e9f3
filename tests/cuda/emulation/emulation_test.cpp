// The CUDA backend's kernels run by the host emulator (no GPU needed; label "cuda_emulation"):
//   * one CTA per row (the host's elementary functions): within the verdict bound of the
//     float128 reference for every row of issue 3 and every dtype, staged bitwise equal to
//     unstaged, including masks, support masks, both log_target paths, the cap, temperatures;
//     the kernel's row sums follow its own chunk order (logit_rows_kernel.cuh), so they are
//     not the CPU backend's bits; the normaliser S (exact) and every pointwise formula are the
//     same, so most elements still agree bitwise (counted, not required);
//   * clusters of 2 (every logit row), 4 and 16 CTAs (empty slices): within the verdict bound of
//     the float128 reference, and staged bitwise equal to unstaged;
//   * the prefetch of the persistent grid (forward only) bitwise equal to one cluster per row;
//   * the streamed kernel of the deferred forward rows within the verdict bound, its tame rows
//     counted as by the cluster kernel; the streamed kernel with gradients within the bound,
//     reproducible under another interleaving of its CTAs, its loss the forward-only streamed
//     kernel's bits;
//   * exact zeros on identical inputs, garbage at masked positions inert;
//   * tvd_prob bitwise equal to the CPU backend for every reduction.
// The emulator runs one OS thread per CUDA thread (barriers are futex waits), so the cases are
// few and small: about 10 minutes of CPU time in all on two cores.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "tests/cpu/test_cases.hpp"
#include "kernels/cpu/reduction.hpp"
#include "kernels/cuda/case_args.hpp"
#include "kernels/cuda/stream_plan.hpp"
#include "tests/cuda/emulation/emulated_backend.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "tests/cuda/gpu_test_support.hpp"

namespace divcheck::gputest {
namespace {

using cuda::CudaOptions;

const Backend& cpu_backend() {
  static const auto b = make_cpu_backend();
  return *b;
}

// One case per (row, dtype): seed 0 or 1 alternates log_target, the cap and the upstream sign.
// The emulated kernel passes the verdict, and its staged and unstaged plans agree bitwise.
void expect_one_cta_sound(std::uint64_t seed, DType dt) {
  const auto staged = make_emulated_cuda_backend(CudaOptions{1, true});
  const auto unstaged = make_emulated_cuda_backend(CudaOptions{1, false});
  for (DivergenceId id : gpu_rows()) {
    if (id == DivergenceId::tvd_prob) continue;  // bitwise equal to the CPU backend: its own test
    Case c = divcheck::testing::random_case(id, dt, seed);
    divcheck::testing::want_all_grads(c, seed == 1 ? -1.25 : 0.75);
    SCOPED_TRACE(label(c) + " seed " + std::to_string(seed));
    const Outputs a = compute(*staged, c);
    EXPECT_TRUE(gpu_passes(a, c, compute_reference(c)));
    EXPECT_TRUE(bitwise_same(a, compute(*unstaged, c))) << "staged and unstaged differ";
  }
}

TEST(KernelEmulation, OneCtaPerRowIsWithinBoundAndStagedEqualsUnstaged) {
  expect_one_cta_sound(0, DType::f32);
  expect_one_cta_sound(1, DType::f32);
  expect_one_cta_sound(1, DType::bf16);
  expect_one_cta_sound(0, DType::f16);
}

TEST(KernelEmulation, OneCtaPerRowLongRowsAreWithinBound) {
  // V = 4100: a thread with two chunks, a partial last chunk, an unaligned row (4100 bf16 is
  // not a whole number of 16-byte words: element-wise chunks) and, for f32, aligned rows.
  const auto staged = make_emulated_cuda_backend(CudaOptions{1, true});
  for (DivergenceId id : gpu_rows()) {
    if (id == DivergenceId::tvd_prob) continue;
    const Case c = varied_case(id, id == DivergenceId::total_variation ? DType::bf16 : DType::f32, 1, 2, 4100, 9);
    SCOPED_TRACE(label(c) + " V=4100");
    EXPECT_TRUE(gpu_passes(compute(*staged, c), c, compute_reference(c)));
  }
}

// Runs a forward-only case on the persistent grid (the emulator's two clusters) and with one
// cluster per row: within the bound, bitwise equal, the prefetch count the host model's
// (expected_prefetches) and none without the persistent grid. Returns the prefetch count.
std::int64_t expect_prefetch_equals_one_cluster_per_row(const Case& c) {
  std::int64_t prefetched = -1, without = -1;
  CudaOptions one{2, true}, persistent{2, true};
  one.row_grid = 1;
  one.prefetched_rows_out = &without;
  persistent.row_grid = 2;
  persistent.prefetched_rows_out = &prefetched;
  const Outputs a = compute(*make_emulated_cuda_backend(persistent), c);
  EXPECT_TRUE(gpu_passes(a, c, compute_reference(c)));
  EXPECT_TRUE(bitwise_same(a, compute(*make_emulated_cuda_backend(one), c))) << "prefetch changed the result";
  EXPECT_EQ(prefetched, expected_prefetches(c, 2));
  EXPECT_EQ(without, 0);
  return prefetched;
}

// The persistent grid's prefetch (forward only): the emulator's two clusters loop over 6 rows,
// each requesting its next row's slices while finishing the current one; masked rows in
// between are skipped, and V = 2052 bf16 makes every other row unaligned (no bulk copy).
// Bitwise equal to one cluster per row, and within the bound.
TEST(KernelEmulation, PrefetchOfTheNextRowEqualsOneClusterPerRow) {
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::jefferys_divergence,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence})
    for (std::int64_t V : {2048, 2052}) {
      const Case c = forward_only(varied_case(id, DType::bf16, 2, 3, V, 80));
      SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
      // The emulator's grid: two clusters. V = 2048: every next row is prefetched (3 with row 1
      // masked, 4 without a mask); V = 2052: only the aligned (even) ones.
      EXPECT_GE(expect_prefetch_equals_one_cluster_per_row(c), V == 2048 ? 3 : 1);
    }
}

// A poisoned row (a NaN logit: loss NaN) in a persistent cluster's loop still requests its next
// row's slices (each path runs the hook after its last read: the one exchange, the S exchange of
// the two-pass rows at T = 1, the range exchange of the others), so the rows after it see their
// own data: bitwise equal to one cluster per row, within the bound, and the prefetch count is
// the host model's, which does not look at poison.
TEST(KernelEmulation, PrefetchAfterAPoisonedRow) {
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::jefferys_divergence,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence}) {
    const std::int64_t V = 2048;
    Case c = forward_only(varied_case(id, DType::bf16, 2, 3, V, 81));
    make_plain(c);  // KL and Jefferys at T = 1 on the one-exchange paths; ts-Jefferys (T = 0.7) not
    Tensor* p = const_cast<Tensor*>(cuda::logit_roles(c).p);
    p->set(0 * V + 17, std::numeric_limits<double>::quiet_NaN());  // row 0: cluster 0's first row
    SCOPED_TRACE(label(c));
    EXPECT_GE(expect_prefetch_equals_one_cluster_per_row(c), 3);
  }
}

// Forward-only launches of KL and cross-entropy on the plain path at T = 1 store each CTA's
// message and combine the rows after the row kernel (defers_row_loss, combine_one_pass_rows):
// the loss is bitwise the loss of the same case with gradients (the mailbox exchange, the same
// order), a poisoned row stays NaN, and the tame rows are counted alike.
TEST(KernelEmulation, DeferredForwardLossEqualsTheLossWithGradients) {
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::masked_cross_entropy})
    for (int ctas : {1, 2, 4}) {
      Case c = varied_case(id, DType::bf16, 2, 3, 3001, 83);
      make_plain(c);
      Tensor* p = const_cast<Tensor*>(cuda::logit_roles(c).p);
      p->set(2 * 3001 + 5, std::numeric_limits<double>::quiet_NaN());  // row 2 poisoned
      const Case f = forward_only(c);
      ASSERT_TRUE(cuda::defers_row_loss(cuda::logit_args_of(f, CudaOptions{})));
      SCOPED_TRACE(label(c) + " " + std::to_string(ctas) + " CTAs");
      std::int64_t tame_f = -1, tame_c = -1;
      CudaOptions of{ctas, true}, oc{ctas, true};
      of.tame_rows_out = &tame_f;
      oc.tame_rows_out = &tame_c;
      const Outputs a = compute(*make_emulated_cuda_backend(of), f);
      const Outputs b = compute(*make_emulated_cuda_backend(oc), c);
      ASSERT_FALSE(b.grads.empty());  // gradients wanted: the mailbox exchange, not deferred
      Outputs b_loss;
      b_loss.loss = b.loss;
      EXPECT_TRUE(bitwise_same(a, b_loss));
      EXPECT_EQ(tame_f, tame_c);
      EXPECT_GT(tame_f, 0);
      EXPECT_TRUE(gpu_passes(a, f, compute_reference(f)));
    }
}

// The emulated cases of the streamed kernels: KL and cross-entropy at T = 1, the temperature KL
// row at T = 2 and 0.5 (PowerOfTwoTemperature) and at T = 3 (by the reciprocal); bf16, f32 (and f16 at T = 1: few emulated cases); V = 10000 (aligned
// rows: whole groups in registers, the last columns by the unstaged passes) and 9001 (unaligned
// 16-bit rows: every tile by the unstaged passes); 2 x 3 rows on the plain path. body(c, t, dt, V,
// k) for the k-th case (from 0); returns the number of cases.
template <class Body>
int for_each_streamed_case(std::uint64_t seed, const Body& body) {
  struct Run {
    DivergenceId id;
    double t;
  };
  const Run runs[] = {{DivergenceId::masked_kl_divergence, 1.0},
                      {DivergenceId::masked_cross_entropy, 1.0},
                      {DivergenceId::temperature_scaled_masked_kl_divergence, 2.0},
                      {DivergenceId::temperature_scaled_masked_kl_divergence, 0.5},
                      {DivergenceId::temperature_scaled_masked_kl_divergence, 3.0}};
  int k = 0;
  for (const Run& run : runs)
    for (DType dt : {DType::bf16, DType::f32, DType::f16})
      for (std::int64_t V : {10000, 9001}) {
        if (dt == DType::f16 && run.t != 1.0) continue;
        Case c = varied_case(run.id, dt, 2, 3, V, ++seed);
        make_plain(c);
        if (run.id == DivergenceId::temperature_scaled_masked_kl_divergence) c.params.temperature = run.t;
        body(c, run.t, dt, V, k++);
      }
  return k;
}

// Row 2 of the p side poisoned (a NaN logit), except in the temperature row, whose token mean
// would be NaN.
void poison_row_two(Case& c, std::int64_t V) {
  if (c.id != DivergenceId::temperature_scaled_masked_kl_divergence)
    const_cast<Tensor*>(cuda::logit_roles(c).p)->set(2 * V + 7, std::numeric_limits<double>::quiet_NaN());
}

// The plan of a streamed case at 128-thread CTAs (groups of 4096 columns in 16-bit, 2048 in
// float) and G groups per tile, and the mix it adds: whole groups in registers, tiles of two merged
// whole groups, parts by the unstaged passes.
struct StreamedMix {
  int fast_groups = 0, merged_tiles = 0, slow_parts = 0;
};
void expect_streamed_plan(const cuda::LogitPlan& plan, DType dt, std::int64_t V, int groups, StreamedMix& mix) {
  ASSERT_TRUE(plan.streamed);
  const std::int64_t group = dt == DType::f32 ? 2048 : 4096;
  ASSERT_EQ(plan.slice, group * groups);
  ASSERT_EQ(plan.ctas, (V + plan.slice - 1) / plan.slice);
  const bool aligned = V % 8 == 0;
  mix.fast_groups += aligned ? static_cast<int>(V / group) : 0;
  mix.slow_parts += aligned ? (V % group != 0) : plan.ctas;
  mix.merged_tiles += aligned && groups == 2 ? static_cast<int>(V / plan.slice) : 0;
}

// The streamed run (options o) and the cluster kernel's (stream_rows 1) of case c: both within
// the bound, the same tame rows (at least one), and NaN losses where the CPU backend has them.
// Returns the streamed run's outputs.
Outputs expect_streamed_and_cluster_within_bound(const Case& c, CudaOptions o) {
  std::int64_t tame_s = -1, tame_c = -1;
  CudaOptions cluster = o;
  cluster.stream_rows = 1;
  o.tame_rows_out = &tame_s;
  cluster.tame_rows_out = &tame_c;
  const Expected e = compute_reference(c);
  const Outputs a = compute(*make_emulated_cuda_backend(o), c);
  EXPECT_TRUE(gpu_passes(a, c, e));
  EXPECT_TRUE(gpu_passes(compute(*make_emulated_cuda_backend(cluster), c), c, e));
  EXPECT_EQ(tame_s, tame_c);
  EXPECT_GT(tame_s, 0);
  const Outputs h = compute(cpu_backend(), c);
  for (std::int64_t k = 0; k < h.loss.numel(); ++k)
    EXPECT_EQ(std::isnan(a.loss.get(k)), std::isnan(h.loss.get(k))) << "loss element " << k;
  return a;
}

// The streamed kernel of the deferred rows (stream_rows_kernel.cuh: one CTA per tile and row, no
// cluster) on the streamed cases, with tiles of one group or two in turn (stream_groups 1, 2:
// the merge of a thread's group partials): within the bound, the poisoned row NaN as on the CPU,
// the tame rows counted as by the deferred cluster kernel (stream_rows 1), identical sides exactly
// 0 (KL).
TEST(KernelEmulation, StreamedRowsAreWithinTheBound) {
  StreamedMix mix;
  const int cases = for_each_streamed_case(101, [&](Case& c, double t, DType dt, std::int64_t V, int k) {
    const Case z = with_identical_sides(forward_only(c));  // (before the poison)
    poison_row_two(c, V);
    const Case f = forward_only(c);
    CudaOptions o;
    o.row_threads = 128;
    o.stream_groups = 1 + (k / 2) % 2;  // (V = 10000 takes both in turn)
    expect_streamed_plan(cuda::stream_plan(cuda::logit_args_of(f, o)), dt, V, o.stream_groups, mix);
    SCOPED_TRACE(label(c) + " T=" + std::to_string(t) + " V=" + std::to_string(V));
    (void)expect_streamed_and_cluster_within_bound(f, o);
    if (c.id != DivergenceId::masked_cross_entropy) {  // (cross-entropy of identical sides is the entropy)
      const Outputs az = compute(*make_emulated_cuda_backend(o), z);
      for (std::int64_t i = 0; i < az.loss.numel(); ++i) EXPECT_EQ(az.loss.get(i), 0.0) << "identical sides, " << i;
    }
  });
  EXPECT_EQ(cases, 2 * 3 * 2 + 3 * 2 * 2);
  std::cout << "[ streamed ] " << cases << " cases, per row: " << mix.fast_groups << " whole groups in registers, "
            << mix.merged_tiles << " tiles of two merged whole groups, " << mix.slow_parts
            << " parts by the unstaged passes\n";
  EXPECT_GT(mix.fast_groups, 0);
  EXPECT_GT(mix.merged_tiles, 0);
  EXPECT_GT(mix.slow_parts, 0);
}

// The centred forward (device_types.hpp centred_forward_launch: jefferys_divergence at T = 1, the
// temperature Jefferys row at T = 2, masked_jefferys_divergence on the probability path
// (log_target = False, its default) and on the log-softmax path, squared_hellinger_distance at
// T = 1; bf16 and f32; V = 10000 and 9001; 128-thread CTAs):
// the streamed kernel with JefferysCentredPolicy, within the bound as the cluster kernel is
// (stream_rows 1), the same tame rows, NaN where the CPU backend has it. Two rows are not tame
// (row 1: a column that is -inf on both sides, a padded vocabulary; row 4: one logit 90 above the
// others) and go to the cluster kernel (launch_centred_fallback); where every row is not tame the
// loss is bitwise the cluster kernel's. Identical sides give exactly 0; a second run is bitwise the
// same.
TEST(KernelEmulation, CentredForwardIsWithinTheBoundAndHandsUntameRowsToTheClusterKernel) {
  struct Run {
    DivergenceId id;
    double t;
    bool probability_path;
  };
  const Run runs[] = {{DivergenceId::jefferys_divergence, 1.0, false},
                      {DivergenceId::temperature_scaled_masked_jefferys_divergence, 2.0, false},
                      {DivergenceId::masked_jefferys_divergence, 1.0, true},
                      {DivergenceId::masked_jefferys_divergence, 1.0, false},
                      {DivergenceId::squared_hellinger_distance, 1.0, false}};
  std::uint64_t seed = 501;
  int cases = 0;
  for (const Run& run : runs)
    for (DType dt : {DType::bf16, DType::f32})
      for (std::int64_t V : {10000, 9001}) {
        Case c = varied_case(run.id, dt, 2, 3, V, ++seed);
        make_plain(c);
        if (run.t != 1.0) c.params.temperature = run.t;
        if (run.probability_path) c.params.log_target = false;
        c = forward_only(c);
        const Case z = with_identical_sides(c);
        Tensor* p = const_cast<Tensor*>(cuda::logit_roles(c).p);
        Tensor* q = const_cast<Tensor*>(cuda::logit_roles(c).q);
        p->set(1 * V + 3, -std::numeric_limits<double>::infinity());
        q->set(1 * V + 3, -std::numeric_limits<double>::infinity());
        p->set(4 * V + 11, 90.0);
        CudaOptions o;
        o.row_threads = 128;
        SCOPED_TRACE(label(c) + " T=" + std::to_string(run.t) + " V=" + std::to_string(V) +
                     (run.probability_path ? " probability path" : ""));
        ASSERT_EQ(cuda::row_paths(cuda::logit_args_of(c, o)), run.probability_path ? cuda::RowPaths::prob_unit_t
                                                              : run.t == 1.0       ? cuda::RowPaths::plain_unit_t
                                                                                   : cuda::RowPaths::plain_pow2_t);
        ASSERT_TRUE(cuda::centred_forward_launch(cuda::logit_args_of(c, o)));
        ASSERT_TRUE(cuda::stream_plan(cuda::logit_args_of(c, o)).streamed);
        const Outputs a = expect_streamed_and_cluster_within_bound(c, o);
        EXPECT_TRUE(bitwise_same(a, compute(*make_emulated_cuda_backend(o), c))) << "a second run differs";
        const Outputs az = compute(*make_emulated_cuda_backend(o), z);
        for (std::int64_t i = 0; i < az.loss.numel(); ++i) EXPECT_EQ(az.loss.get(i), 0.0) << "identical sides, " << i;
        // Every row not tame: the cluster kernel's loss, bit for bit.
        Case u = c;
        Tensor* up = const_cast<Tensor*>(cuda::logit_roles(u).p);
        Tensor* uq = const_cast<Tensor*>(cuda::logit_roles(u).q);
        for (std::int64_t r = 0; r < 6; ++r) {
          up->set(r * V, -std::numeric_limits<double>::infinity());
          uq->set(r * V, -std::numeric_limits<double>::infinity());
        }
        CudaOptions cluster = o;
        cluster.stream_rows = 1;
        EXPECT_TRUE(
            bitwise_same(compute(*make_emulated_cuda_backend(o), u), compute(*make_emulated_cuda_backend(cluster), u)))
            << "rows that are not tame differ from the cluster kernel's";
        ++cases;
      }
  EXPECT_EQ(cases, 5 * 2 * 2);
}

// The streamed kernel with gradients (stream_grad_rows_kernel.cuh, forced: stream_rows 2) on the
// streamed cases, G = 1 and 2 in turn. Its three emulated CTAs run concurrently, each over its
// items, interleaved as the OS threads run (the varied case's masks: fully masked sequences among
// them). Within the bound (loss and both gradients), as the cluster kernel (stream_rows 1) is; NaN
// loss and gradients exactly where the CPU backend has them; tame rows counted as by the cluster
// kernel; bitwise the same on a second run (another interleaving); the loss bitwise the
// forward-only streamed kernel's at the same G (the same messages, the same combine); identical
// sides give a loss of exactly 0 and gradients of exactly 0 (KL).
TEST(KernelEmulation, StreamedRowsWithGradientsAreWithinTheBound) {
  StreamedMix mix;
  int nan_rows = 0;
  const int cases = for_each_streamed_case(301, [&](Case& c, double t, DType dt, std::int64_t V, int k) {
    divcheck::testing::want_all_grads(c, k % 2 ? -1.25 : 0.75);
    const Case z = with_identical_sides(c);  // (before the poison)
    poison_row_two(c, V);
    CudaOptions o;
    o.row_threads = 128;
    o.stream_rows = 2;  // (with gradients only where forced: bench/RESULTS.md step 56)
    o.stream_groups = 1 + (k / 2) % 2;  // (V = 10000 takes both in turn)
    expect_streamed_plan(cuda::stream_plan(cuda::logit_args_of(c, o)), dt, V, o.stream_groups, mix);
    SCOPED_TRACE(label(c) + " T=" + std::to_string(t) + " V=" + std::to_string(V) + " G=" +
                 std::to_string(o.stream_groups));
    const Outputs a = expect_streamed_and_cluster_within_bound(c, o);
    EXPECT_TRUE(bitwise_same(a, compute(*make_emulated_cuda_backend(o), c))) << "a second run differs";
    const Outputs f = compute(*make_emulated_cuda_backend(o), forward_only(c));  // the same G
    for (std::int64_t i = 0; i < a.loss.numel(); ++i)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(static_cast<float>(a.loss.get(i))),
                std::bit_cast<std::uint32_t>(static_cast<float>(f.loss.get(i))))
          << "loss element " << i << " differs from the forward-only streamed kernel's";
    const Outputs h = compute(cpu_backend(), c);
    for (const auto& [name, g] : h.grads) {
      const Tensor& ga = a.grads.at(name);
      std::int64_t nans = 0;
      for (std::int64_t i = 0; i < g.numel(); ++i) {
        EXPECT_EQ(std::isnan(ga.get(i)), std::isnan(g.get(i))) << name << " element " << i;
        nans += std::isnan(ga.get(i)) ? 1 : 0;
      }
      nan_rows += static_cast<int>(nans / V);
    }
    if (c.id != DivergenceId::masked_cross_entropy) {  // (cross-entropy of identical sides is the entropy)
      const Outputs az = compute(*make_emulated_cuda_backend(o), z);
      for (std::int64_t i = 0; i < az.loss.numel(); ++i) EXPECT_EQ(az.loss.get(i), 0.0) << "identical sides, " << i;
      for (const auto& [name, g] : az.grads)
        for (std::int64_t i = 0; i < g.numel(); ++i)
          ASSERT_EQ(g.get(i), 0.0) << "identical sides, " << name << " " << i;
    }
  });
  EXPECT_EQ(cases, 2 * 3 * 2 + 3 * 2 * 2);
  std::cout << "[ streamed with gradients ] " << cases << " cases, per row: " << mix.fast_groups
            << " whole groups in registers, " << mix.slow_parts << " parts by the unstaged passes; " << nan_rows
            << " poisoned gradient rows\n";
  EXPECT_GT(mix.fast_groups, 0);
  EXPECT_GT(mix.slow_parts, 0);
  EXPECT_GT(nan_rows, 0);
}

// Forward-only launches that are not deferred run the loss-only kernel (device_types.hpp
// row_variant: no gradient pass, the statistics pass sums only the loss's terms): on every path
// (the varied case: support mask, log_target = False, T = 0.7; and its plain form; clusters of 1,
// 2 and 4 CTAs in turn) the loss is bitwise the loss of the same case with gradients and within
// the bound; a poisoned row stays NaN.
TEST(KernelEmulation, LossOnlyForwardLossEqualsTheLossWithGradients) {
  int runs = 0;
  for (DivergenceId id : gpu_rows())
    for (bool plain : {false, true}) {
      if (id == DivergenceId::tvd_prob) continue;
      const std::int64_t V = 2003;
      Case c = varied_case(id, DType::bf16, 2, 3, V, 87);
      if (plain) make_plain(c);
      if (cuda::row_variant(cuda::logit_args_of(forward_only(c), CudaOptions{})) != cuda::RowVariant::loss_only)
        continue;
      Tensor* p = const_cast<Tensor*>(cuda::logit_roles(c).p);
      p->set(2 * V + 5, std::numeric_limits<double>::quiet_NaN());  // row 2 poisoned
      const Case f = forward_only(c);
      const int ctas = 1 << (runs % 3);  // 1, 2, 4 CTAs in turn (the emulator is slow)
      SCOPED_TRACE(label(c) + (plain ? " plain " : " varied ") + std::to_string(ctas) + " CTAs");
      const CudaOptions o{ctas, true};
      const Outputs a = compute(*make_emulated_cuda_backend(o), f);
      const Outputs b = compute(*make_emulated_cuda_backend(o), c);
      ASSERT_FALSE(b.grads.empty());  // gradients wanted: the full kernel
      Outputs b_loss;
      b_loss.loss = b.loss;
      EXPECT_TRUE(bitwise_same(a, b_loss));
      EXPECT_TRUE(gpu_passes(a, f, compute_reference(f)));
      ++runs;
    }
  // The six rows other than KL, cross-entropy and ts-KL never defer: 6 x 2 paths (ts-KL defers on
  // the plain path at T = 0.7 since it takes T by the reciprocal, bench/RESULTS.md step 72).
  EXPECT_GE(runs, 12);
}

// The temperature rows on a plain path at T != 1, both temperatures of `ts` taking `paths`: clusters
// of 1, 2 and 4 CTAs in turn, with gradients and forward only; within the bound, staged bitwise
// equal to unstaged, the forward-only loss bitwise the loss with gradients, and the tame forms
// run (the tame rows are counted). Forward-only ts-KL defers.
void expect_temperature_rows_take_the_one_exchange_path(std::initializer_list<double> ts, cuda::RowPaths paths,
                                                        std::uint64_t seed) {
  int runs = 0, deferred = 0;
  for (DivergenceId id : {DivergenceId::temperature_scaled_masked_kl_divergence,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence})
    for (double t : ts) {
      const std::int64_t V = 2003;
      Case c = varied_case(id, DType::bf16, 2, 3, V, seed);
      make_plain(c);
      c.params.temperature = t;  // (no poisoned row: one NaN would make the token mean NaN)
      const Case f = forward_only(c);
      const cuda::LogitArgs args = cuda::logit_args_of(f, CudaOptions{});
      ASSERT_EQ(cuda::row_paths(args), paths);
      deferred += cuda::row_variant(args) == cuda::RowVariant::deferred;
      const int ctas = 1 << (runs % 3);
      SCOPED_TRACE(label(c) + " T=" + std::to_string(t) + " " + std::to_string(ctas) + " CTAs");
      std::int64_t tame = -1;
      CudaOptions staged{ctas, true}, unstaged{ctas, false};
      staged.tame_rows_out = &tame;
      const Outputs b = compute(*make_emulated_cuda_backend(staged), c);
      ASSERT_FALSE(b.grads.empty());
      EXPECT_TRUE(gpu_passes(b, c, compute_reference(c)));
      EXPECT_GT(tame, 0);
      EXPECT_TRUE(bitwise_same(b, compute(*make_emulated_cuda_backend(unstaged), c))) << "staged and unstaged differ";
      const Outputs a = compute(*make_emulated_cuda_backend(CudaOptions{ctas, true}), f);
      Outputs b_loss;
      b_loss.loss = b.loss;
      EXPECT_TRUE(bitwise_same(a, b_loss));
      EXPECT_TRUE(gpu_passes(a, f, compute_reference(f)));
      ++runs;
    }
  EXPECT_EQ(runs, 2 * static_cast<int>(ts.size()));
  EXPECT_EQ(deferred, static_cast<int>(ts.size()));  // ts-KL (the KL policy) at every temperature
}

// T = 2^k, 2 <= T <= 2^62 (RowPaths::plain_pow2_t: the division by T is a multiplication, and the
// tame one-pass sums fold 2^-k out of the columns, math::folds_into_one_pass_sums): T = 2, 16 and
// 2^62.
TEST(KernelEmulation, PowerOfTwoTemperatureRowsTakeTheOneExchangePath) {
  expect_temperature_rows_take_the_one_exchange_path({2.0, 16.0, 0x1p62}, cuda::RowPaths::plain_pow2_t, 89);
}

// Any other T whose reciprocal is a normal float (RowPaths::plain_recip_t: every shifted logit the
// product by 1/T rounded, math::ReciprocalTemperature; docs/tolerances.md counts the product's
// rounding in e_v): T = 3 and 0.7, and the powers of two the pow2 kernels leave to them (0.5, 2^63).
TEST(KernelEmulation, ReciprocalTemperatureRowsTakeTheOneExchangePath) {
  expect_temperature_rows_take_the_one_exchange_path({3.0, 0.7, 0.5, 0x1p63}, cuda::RowPaths::plain_recip_t, 91);
}

// A partly staged plan (LogitArgs::partial_stage: the first K chunks of each slice in shared
// memory, the rest read from global memory by every pass; its kernels of their own, float32
// only: device_types.hpp partly_staged) sums in the unstaged plan's order: every logit row,
// forward only (the cluster kernel, stream_rows 1; the emulator's two clusters loop over the
// rows, so the forward-only launches prefetch each next row's staged part) and with gradients, on
// the plain path and the varied one, bitwise the unstaged plan's results. 2 CTAs of 256 threads;
// V = 60000 (aligned rows: the bulk copy of K chunks) and 60001 (unaligned rows: each thread
// stages its chunks below K; a partial last chunk past K), with the emulator's budget shared by
// 3 CTAs (K = 8448 of the 30000 columns of a float slice: (232448 - static) / 3 - 8192 bytes of
// records, over 8 bytes a column, in multiples of 256 columns).
TEST(KernelEmulation, PartlyStagedPlansEqualTheUnstagedPlanBitwise) {
  int runs = 0;
  for (DivergenceId id : gpu_rows())
    if (id != DivergenceId::tvd_prob)
      for (std::int64_t V : {60000, 60001})
        for (bool plain : {true, false})
          for (bool fwd : {true, false}) {
            Case c = varied_case(id, DType::f32, 1, 3, V, 97 + static_cast<std::uint64_t>(V));
            if (plain) make_plain(c);
            if (fwd) c = forward_only(c);
            CudaOptions part{2, true, true, nullptr, 256}, unstaged{2, false, true, nullptr, 256};
            part.partial_stage = 3;
            part.stream_rows = unstaged.stream_rows = 1;
            SCOPED_TRACE(label(c) + " V=" + std::to_string(V) + (plain ? " plain" : "") + (fwd ? " forward" : ""));
            EXPECT_TRUE(bitwise_same(compute(*make_emulated_cuda_backend(part), c),
                                     compute(*make_emulated_cuda_backend(unstaged), c)));
            ++runs;
          }
  EXPECT_EQ(runs, 9 * 2 * 2 * 2);
}

// The partly staged kernels are float32's: a forced partly staged plan of 16-bit logits is an
// InvalidArgument naming partial_stage (the launcher's validate refuses it the same way).
TEST(KernelEmulation, PartlyStagedPlansOf16BitLogitsAreRefused) {
  for (DType dt : {DType::bf16, DType::f16}) {
    const Case c = varied_case(DivergenceId::masked_kl_divergence, dt, 1, 2, 60000, 5);
    CudaOptions part{2, true, true, nullptr, 256};
    part.partial_stage = 3;
    part.stream_rows = 1;
    try {
      compute(*make_emulated_cuda_backend(part), c);
      ADD_FAILURE() << "a partly staged plan of " << label(c) << " ran";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("partial_stage"), std::string::npos) << e.what();
    }
  }
}

// A cluster plan: judged against the reference; staged and unstaged bitwise equal. plain: the
// kernel's plain path (log-softmax, no support mask: varied_case gives the rows that have one a
// support mask), where T = 1 takes one_exchange_row.
void expect_cluster_plan_sound(DivergenceId id, int ctas, std::int64_t V, int threads = 512, bool plain = false) {
  Case c = varied_case(id, DType::bf16, 1, 2, V, 70);
  if (plain) make_plain(c);
  SCOPED_TRACE(label(c) + " " + std::to_string(ctas) + " CTAs x " + std::to_string(threads) +
               " threads, V=" + std::to_string(V));
  const Outputs a = compute(*make_emulated_cuda_backend(CudaOptions{ctas, true, true, nullptr, threads}), c);
  const Outputs b = compute(*make_emulated_cuda_backend(CudaOptions{ctas, false, true, nullptr, threads}), c);
  EXPECT_TRUE(gpu_passes(a, c, compute_reference(c)));
  EXPECT_TRUE(bitwise_same(a, b)) << "staged and unstaged differ";
}

TEST(KernelEmulation, ClustersOfTwoAreWithinBoundForEveryLogitRow) {
  for (DivergenceId id : gpu_rows())
    if (id != DivergenceId::tvd_prob) expect_cluster_plan_sound(id, 2, 3001);
}

// The plain path of every logit row with clusters of two and of four (one exchange for KL and
// cross-entropy, S with the range for Jefferys, Jensen-Shannon and Hellinger, at T = 1).
TEST(KernelEmulation, PlainPathClustersAreWithinBoundForEveryLogitRow) {
  for (DivergenceId id : gpu_rows())
    if (id != DivergenceId::tvd_prob) {
      expect_cluster_plan_sound(id, 2, 3001, 256, true);
      expect_cluster_plan_sound(id, 4, 4100, 128, true);
    }
}

TEST(KernelEmulation, ClustersOf256ThreadCtasAreWithinBoundForEveryLogitRow) {
  for (DivergenceId id : gpu_rows())
    if (id != DivergenceId::tvd_prob) expect_cluster_plan_sound(id, 2, 3001, 256);
}

TEST(KernelEmulation, ClustersOf128ThreadCtasAreWithinBound) {  // the bench knob's plans
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::jensen_shannon_divergence,
                          DivergenceId::total_variation})
    expect_cluster_plan_sound(id, 4, 3001, 128);
}

TEST(KernelEmulation, ClustersOfFourAndSixteenWithEmptySlicesAreWithinBound) {
  // V = 5003: with 4 CTAs the last slice is empty; with 16, eleven are.
  expect_cluster_plan_sound(DivergenceId::total_variation, 4, 5003);
  expect_cluster_plan_sound(DivergenceId::jensen_shannon_divergence, 4, 5003);
  expect_cluster_plan_sound(DivergenceId::jefferys_divergence, 16, 5003);
}

TEST(KernelEmulation, IdenticalInputsGiveExactZerosAndMaskedGarbageIsInert) {
  const auto b2 = make_emulated_cuda_backend(CudaOptions{2, true});
  for (DivergenceId id : gpu_rows()) {
    const Case base = varied_case(id, DType::f16, 2, 2, 1100, 5);
    SCOPED_TRACE(label(base));
    if (info(id).props.zero_on_identical) {
      Case plain = base;  // no support mask: the one-exchange rows (tame: the one-pass statistics)
      make_plain(plain);
      for (const Case& c : {base, plain}) {
        const Outputs o = compute(*b2, with_identical_sides(c));
        for (std::int64_t i = 0; i < o.loss.numel(); ++i) EXPECT_EQ(o.loss.get(i), 0.0) << "loss[" << i << "]";
        for (const auto& [role, g] : o.grads)
          for (std::int64_t i = 0; i < g.numel(); ++i) ASSERT_EQ(g.get(i), 0.0) << role << "[" << i << "]";
      }
    }
    const Case dirty = with_garbage_at_masked(base);
    const Outputs a = compute(*b2, with_zeros_at_masked(base)), d = compute(*b2, dirty);
    EXPECT_TRUE(bitwise_same(a, d));
    EXPECT_EQ(masked_gradients_are_plus_zero(dirty, d), "");
  }
}

// The loss reductions over positions (kernels/cuda/position_device.cuh: a warp per sequence, one
// warp per mean, in the lane order of reduction_order.hpp) against the CPU backend's
// PositionReduction, bit for bit, for every reduction: sequences longer than the 1024 lanes
// (T = 2500), a fully masked sequence, masked positions holding NaN (never read), many sequences
// of one position; the row losses span 2^-20 .. 2^20, so a different order would show.
TEST(KernelEmulation, PositionReductionsEqualTheCpuBackendBitwise) {
  std::mt19937_64 rng(39);
  int compared = 0;
  for (auto [B, T] : std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 2500}, {40, 1}, {5, 33}})
    for (auto red : {cuda::PositionReduction::sequence_mean, cuda::PositionReduction::sequence_none,
                     cuda::PositionReduction::token_mean}) {
      const std::int64_t n = B * T;
      Tensor mask(DType::f32, {B, T});
      std::vector<std::uint8_t> valid(static_cast<std::size_t>(n));
      std::vector<float> ell(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        const bool ok = i / T != 1 && rng() % 5 != 0;  // sequence 1 fully masked
        valid[static_cast<std::size_t>(i)] = ok ? 1 : 0;
        mask.set(i, ok ? 1.0 : 0.0);
        const double mag = std::ldexp(1.0, static_cast<int>(rng() % 41) - 20);
        ell[static_cast<std::size_t>(i)] = ok ? static_cast<float>(mag * (0.5 + (rng() % 1000) / 1000.0))
                                              : std::numeric_limits<float>::quiet_NaN();
      }
      Case c;  // no gradients: only the loss
      const cpu::ReductionKind kind = red == cuda::PositionReduction::sequence_mean   ? cpu::ReductionKind::sequence_mean
                                      : red == cuda::PositionReduction::sequence_none ? cpu::ReductionKind::sequence_none
                                                                                      : cpu::ReductionKind::token_mean;
      cpu::PositionReduction cpu_red(c, kind, B, T, &mask, 1.0);
      for (std::int64_t i = 0; i < n; ++i)
        if (valid[static_cast<std::size_t>(i)]) cpu_red.set_loss(i / T, i % T, ell[static_cast<std::size_t>(i)]);
      const Tensor want = cpu_red.loss();
      std::vector<float> seq_loss(static_cast<std::size_t>(B)), got(static_cast<std::size_t>(B), -1.0f);
      emulate_reduce_positions(valid.data(), B, T, red, ell.data(), seq_loss.data(), got.data());
      SCOPED_TRACE("B " + std::to_string(B) + " T " + std::to_string(T) + " reduction " +
                   std::to_string(static_cast<int>(red)));
      for (std::int64_t k = 0; k < want.numel(); ++k) {
        const float w = static_cast<float>(want.get(k));
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got[static_cast<std::size_t>(k)]), std::bit_cast<std::uint32_t>(w))
            << "output " << k << ": " << got[static_cast<std::size_t>(k)] << " vs " << w;
        EXPECT_TRUE(std::isfinite(w));
        ++compared;
      }
    }
  EXPECT_EQ(compared, (2 + 3) + (2 + 40) + (2 + 5));  // per shape: two scalars and B values (none)
}

TEST(KernelEmulation, TvdProbBitwiseEqualToCpuBackendForEveryReduction) {
  const auto emulated = make_emulated_cuda_backend(CudaOptions{});
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (std::uint64_t seed = 0; seed < 4; ++seed) {  // seed % 4 picks the reduction
      Case c = varied_case(DivergenceId::tvd_prob, dt, 2, 3, 1500, seed);
      // Ties at every fifth element of row 0 (gradient exactly 0 there).
      const Tensor& p = c.inputs.at("p");
      for (std::int64_t v = 0; v < 1500; v += 5) c.inputs.at("q").set(v, p.get(v));
      SCOPED_TRACE(label(c) + " reduction " + c.params.reduction);
      EXPECT_TRUE(bitwise_same(compute(*emulated, c), compute(cpu_backend(), c)));
    }
}

}  // namespace
}  // namespace divcheck::gputest

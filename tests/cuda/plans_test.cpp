// The execution plans of the logit row kernel (CTAs per row x shared-memory staging): every
// plan is within the verdict bound of the reference; plans with the same summation order are
// bitwise equal (staged and unstaged with the same number of CTAs; the automatic plan and the
// same plan forced; the persistent grid, with its prefetch, and one cluster per row); the
// automatic plan at the two benchmark shapes keeps rows on chip.
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>

#include "core/errors.hpp"
#include "kernels/cuda/case_args.hpp"
#include "tests/cpu/test_cases.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "tests/cuda/gpu_test_support.hpp"

namespace divcheck::gputest {
namespace {

using GpuPlans = GpuTest;
using cuda::CudaOptions;

std::vector<DivergenceId> logit_rows() {
  std::vector<DivergenceId> v;
  for (DivergenceId id : gpu_rows())
    if (id != DivergenceId::tvd_prob) v.push_back(id);
  return v;
}

// Cluster sizes this device can run for a case (a cluster of 16 is non-portable).
bool schedulable(const Case& c, const CudaOptions& o, std::string& why) {
  try {
    (void)cuda::plan_for_case(c, o);
    return true;
  } catch (const Unavailable& e) {
    why = e.what();
    return false;
  }
}

TEST_F(GpuPlans, EveryClusterSizeStagedOrNotIsWithinBound) {
  for (DivergenceId id : logit_rows())
    for (std::int64_t V : {5003, 20000}) {
      const DType dt = V == 5003 ? DType::f32 : DType::bf16;
      const Case c = varied_case(id, dt, 1, 3, V, 40 + static_cast<std::uint64_t>(V));
      SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
      const Expected e = compute_reference(c);
      for (int ctas : {1, 2, 4, 8, 16}) {
        const CudaOptions staged{ctas, true}, unstaged{ctas, false};
        std::string why;
        if (!schedulable(c, staged, why)) {
          // Only the non-portable size may be refused; then the automatic plan never uses it.
          EXPECT_EQ(ctas, 16) << why;
          EXPECT_NE(cuda::plan_for_case(c, CudaOptions{}).ctas, 16);
          std::cout << "[ note ] " << why << "\n";
          continue;
        }
        const Outputs a = compute(*cuda::make_cuda_backend_with(staged), c);
        const Outputs b = compute(*cuda::make_cuda_backend_with(unstaged), c);
        EXPECT_TRUE(gpu_passes(a, c, e)) << ctas << " CTAs staged";
        EXPECT_TRUE(gpu_passes(b, c, e)) << ctas << " CTAs unstaged";
        EXPECT_TRUE(bitwise_same(a, b)) << ctas << " CTAs: staged and unstaged differ";
      }
    }
}

TEST_F(GpuPlans, AutomaticPlanEqualsTheForcedSamePlan) {
  for (DivergenceId id : logit_rows())
    for (std::int64_t V : {100, 70000}) {
      const Case c = varied_case(id, DType::f32, 1, 2, V, 50);
      SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
      const cuda::LogitPlan plan = cuda::plan_for_case(c, CudaOptions{});
      const Outputs a = compute(gpu(), c);
      const Outputs b = compute(
          *cuda::make_cuda_backend_with(CudaOptions{plan.ctas, plan.staged, true, nullptr, plan.threads}), c);
      EXPECT_TRUE(bitwise_same(a, b)) << plan.ctas << " CTAs x " << plan.threads << " threads, staged "
                                      << plan.staged;
    }
}

// The automatic row grid and placement of the cluster kernel (logit_launch.cu persistent_grid,
// cluster_placement; bench/RESULTS.md step 68): forward only, a persistent grid placed by load
// balancing, but total variation's, one cluster per row; with gradients one cluster per row; both
// under the driver's default placement where not persistent; a forced placement is the plan's.
// (stream_rows 1: forward-only KL, cross-entropy and the temperature KL row would take the
// streamed kernel.)
TEST_F(GpuPlans, RowGridAndPlacementFollowTheAutomaticRules) {
  for (DivergenceId id : logit_rows())
    for (bool loss_only : {true, false}) {
      const Case full = varied_case(id, DType::bf16, 2, 8, 20000, 91);
      const Case c = loss_only ? forward_only(full) : full;
      SCOPED_TRACE(label(c) + (loss_only ? " forward" : " forward+backward"));
      CudaOptions o;
      o.stream_rows = 1;
      const cuda::LogitPlan plan = cuda::plan_for_case(c, o);
      EXPECT_EQ(plan.persistent, loss_only && id != DivergenceId::total_variation);
      EXPECT_EQ(plan.cluster_policy, plan.persistent ? 2 : 0);
      for (int forced : {1, 2}) {
        o.cluster_policy = forced;
        EXPECT_EQ(cuda::plan_for_case(c, o).cluster_policy, forced);
      }
    }
}

// The placement preference of a cluster's CTAs (LogitArgs::cluster_policy: automatic, spread, load
// balancing) decides only which SMs run them: every logit row, forward only and with gradients, at
// 8 and 16 CTAs per row (1000 rows, more than the device holds at once, so clusters start as
// others end), gives bitwise the automatic plan's results under each preference.
TEST_F(GpuPlans, ClusterPlacementDoesNotChangeTheBits) {
  for (DivergenceId id : logit_rows())
    for (bool loss_only : {true, false}) {
      const Case full = varied_case(id, DType::bf16, 2, 500, 20000, 90);
      const Case c = loss_only ? forward_only(full) : full;
      for (int ctas : {8, 16}) {
        CudaOptions base;
        base.cluster_ctas = ctas;
        base.row_threads = 256;
        std::string why;
        if (!schedulable(c, base, why)) {
          EXPECT_EQ(ctas, 16) << why;  // only the non-portable size may be refused
          continue;
        }
        const Outputs a = compute(*cuda::make_cuda_backend_with(base), c);
        for (int policy : {1, 2}) {
          CudaOptions o = base;
          o.cluster_policy = policy;
          SCOPED_TRACE(label(c) + (loss_only ? " forward" : " forward+backward") + " " + std::to_string(ctas) +
                       " CTAs, policy " + std::to_string(policy));
          EXPECT_GE(cuda::plan_for_case(c, o).resident_clusters, 1);
          EXPECT_TRUE(bitwise_same(a, compute(*cuda::make_cuda_backend_with(o), c)));
        }
      }
    }
}

// The T = 2^k kernels (RowPaths::plain_pow2_t) sum a tame row's one-pass terms in units of T and
// scale once (docs/tolerances.md, "The tame one-pass sums at T = 2^k in units of T"); the
// reciprocal's kernels (LogitArgs::pow2_kernels false) form every t = d 2^-k, the division's bits.
// Without subnormal intermediates (these logits: bf16 and f32 draws of moderate size) the two are
// the same bits: both temperature rows, forward only (the streamed kernel, and the cluster kernel
// by stream_rows 1) and with gradients, T = 2, 16 and 2^40, where the rows are tame (counted); but
// the temperature Jefferys row's streamed forward (centred records) has no reciprocal twin.
TEST_F(GpuPlans, PowerOfTwoKernelsEqualTheReciprocalKernelsBitwise) {
  int compared = 0;
  for (DivergenceId id : {DivergenceId::temperature_scaled_masked_kl_divergence,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence})
    for (DType dt : {DType::bf16, DType::f32})
      for (double t : {2.0, 16.0, 0x1p40})
        for (bool forward : {true, false}) {
          Case c = varied_case(id, dt, 2, 6, 20011, 97);
          make_plain(c);
          c.params.temperature = t;
          if (forward) c.wants_grad.clear();
          const Expected reference = compute_reference(c);
          for (int stream_rows : {0, 1}) {
            CudaOptions fold, recip;
            fold.stream_rows = recip.stream_rows = stream_rows;
            recip.pow2_kernels = false;
            std::int64_t tame = -1;
            fold.tame_rows_out = &tame;
            SCOPED_TRACE(label(c) + " T=" + std::to_string(t) + (forward ? " forward" : " forward+backward") +
                         " stream_rows " + std::to_string(stream_rows));
            ASSERT_EQ(cuda::row_paths(cuda::logit_args_of(c, fold)), cuda::RowPaths::plain_pow2_t);
            ASSERT_EQ(cuda::row_paths(cuda::logit_args_of(c, recip)), cuda::RowPaths::plain_recip_t);
            const Outputs a = compute(*cuda::make_cuda_backend_with(fold), c);
            EXPECT_GT(tame, 0);
            // (The temperature Jefferys row forward at T = 2^k, automatic plan: the centred records of
            // the streamed kernel, another algorithm than the reciprocal's cluster kernel: within the
            // bound only.)
            if (!(stream_rows == 0 && cuda::centred_forward_launch(cuda::logit_args_of(c, fold))))
              EXPECT_TRUE(bitwise_same(a, compute(*cuda::make_cuda_backend_with(recip), c)));
            EXPECT_TRUE(gpu_passes(a, c, reference));
            ++compared;
          }
        }
  EXPECT_EQ(compared, 2 * 2 * 3 * 2 * 2);
}

// A partly staged plan (LogitArgs::partial_stage: each CTA keeps the first K chunks of its slices
// in shared memory and reads the rest from global memory in every pass) has the summation order
// of the whole staged plan of the same C x N: every logit row, forward only (the cluster kernel:
// stream_rows 1; forward-only launches but total variation's run the persistent grid, which
// prefetches the next row's staged part and asks the L2 for the rest) and with gradients, gives
// bitwise its results. The shapes are those where the plan applies (slices that fit an SM whole but not two or three per
// SM; the partly staged kernels are float32's): V = 256000 with 16 CTAs, 128256 with 8; V =
// 256003 gives unaligned rows (each thread stages its own chunks below K) and a partial last
// chunk past K.
TEST_F(GpuPlans, PartlyStagedPlansEqualTheWholeStagedPlanBitwise) {
  int compared = 0;
  const std::pair<std::int64_t, int> shapes[] = {{256000, 16}, {256003, 16}, {128256, 8}};
  for (DivergenceId id : logit_rows())
    for (const auto& [V, ctas] : shapes) {
      const DType dt = DType::f32;
      for (bool forward_only : {true, false}) {
        Case c = varied_case(id, dt, 2, 3, V, 95 + static_cast<std::uint64_t>(V));
        if (forward_only) {
          c.wants_grad.clear();
          c.grad_output = Tensor();
        }
        CudaOptions whole;
        whole.cluster_ctas = ctas;
        whole.row_threads = 256;
        whole.stream_rows = 1;
        const cuda::LogitPlan wp = cuda::plan_for_case(c, whole);
        ASSERT_TRUE(wp.staged);
        ASSERT_EQ(wp.staged_columns, wp.slice);
        const Outputs a = compute(*cuda::make_cuda_backend_with(whole), c);
        for (int per_sm : {2, 3}) {
          CudaOptions part = whole;
          part.cluster_ctas = ctas;
          part.partial_stage = per_sm;
          const cuda::LogitPlan pp = cuda::plan_for_case(c, part);
          SCOPED_TRACE(label(c) + (forward_only ? " forward" : " forward+backward") + " V=" + std::to_string(V) +
                       ", " + std::to_string(per_sm) + " CTAs per SM: " + std::to_string(pp.staged_columns) +
                       " of " + std::to_string(pp.slice) + " columns staged");
          EXPECT_EQ(pp.ctas, ctas);
          EXPECT_EQ(pp.threads, 256);
          EXPECT_TRUE(pp.staged);
          EXPECT_GT(pp.staged_columns, 0);
          EXPECT_LT(pp.staged_columns, pp.slice);
          EXPECT_EQ(pp.staged_columns % 256, 0);
          EXPECT_TRUE(bitwise_same(a, compute(*cuda::make_cuda_backend_with(part), c)));
          ++compared;
        }
      }
    }
  std::cout << "[ mix  ] " << compared << " partly staged runs compared bitwise\n";
  EXPECT_EQ(compared, 9 * 3 * 2 * 2);
}

// partial_stage is refused, naming it, where the slices fit whole (a small V), and for 16-bit
// logits (the partly staged kernels are float32's) even where their slices would not fit whole.
TEST_F(GpuPlans, PartialStageIsRefusedWhereTheSlicesFitWholeAndFor16BitLogits) {
  struct Refused {
    DType dt;
    std::int64_t V;
    int ctas;
  };
  for (const Refused& r : {Refused{DType::f32, 20000, 0}, Refused{DType::bf16, 20000, 0},
                           Refused{DType::bf16, 256000, 8}, Refused{DType::f16, 512000, 16}}) {
    const Case c = varied_case(DivergenceId::masked_kl_divergence, r.dt, 1, 2, r.V, 7);
    CudaOptions o;
    o.partial_stage = 2;
    o.cluster_ctas = r.ctas;
    SCOPED_TRACE(label(c) + " V=" + std::to_string(r.V));
    try {
      (void)cuda::plan_for_case(c, o);
      ADD_FAILURE() << "partial_stage 2 accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "partial_stage");
    }
  }
}

// A case run twice: on the persistent grid (row_grid 2, with the count of prefetched rows) and
// with one cluster per row (row_grid 1). The plan must be persistent and staged, with at most
// half as many resident clusters as the case has rows (every cluster loops over two rows or more).
struct PersistentRun {
  cuda::LogitPlan plan;
  Outputs one, persistent;
  std::int64_t prefetched = -1;
};
PersistentRun run_persistent_and_one_per_row(const Case& c) {
  PersistentRun r;
  CudaOptions one, persistent;
  one.row_grid = 1;
  persistent.row_grid = 2;
  persistent.prefetched_rows_out = &r.prefetched;
  r.plan = cuda::plan_for_case(c, persistent);
  EXPECT_TRUE(r.plan.persistent);
  EXPECT_TRUE(r.plan.staged);
  const Tensor& y = *cuda::logit_roles(c).p;
  EXPECT_LE(2 * r.plan.resident_clusters, y.dim(0) * y.dim(1)) << "every cluster must loop over two rows or more";
  r.one = compute(*cuda::make_cuda_backend_with(one), c);
  r.persistent = compute(*cuda::make_cuda_backend_with(persistent), c);
  return r;
}

// The persistent grid (LogitArgs::row_grid 2: fewer clusters than rows, each looping over its
// rows) gives bitwise the results of one cluster per row (which the other tests hold to the
// reference), forward only (where a cluster requests its next row's slices ahead: the
// prefetch) and with gradients. 1600 rows are more than twice the clusters an H200 holds at once
// at this V (one-CTA clusters: 396 at three per SM; 528 for cross-entropy's kernel with gradients
// since its 64 registers of step 67, bench/RESULTS.md, which the old 1000 rows did not cover),
// so every cluster processes two rows or more; the masked rows of varied_case and an extra masked
// run of rows are skipped by the prefetch; the odd V makes every other row unaligned (no bulk
// copy).
TEST_F(GpuPlans, PersistentGridEqualsOneClusterPerRow) {
  for (DivergenceId id : logit_rows())
    for (std::int64_t V : {4096, 4099}) {
      Case c = varied_case(id, DType::bf16, 2, 800, V, 70 + static_cast<std::uint64_t>(V));
      const std::string role = testing::mask_role(id);
      if (!role.empty())  // a run of masked positions in sequence 0 (rows without a mask: none)
        for (std::int64_t t = 100; t < 160; ++t) c.inputs.at(role).set(t, 0.0);
      for (bool forward_only : {true, false}) {
        Case k = c;
        if (forward_only) {
          k.wants_grad.clear();
          k.grad_output = Tensor();
        }
        SCOPED_TRACE(label(k) + " V=" + std::to_string(V) + (forward_only ? " forward" : " forward+backward"));
        const PersistentRun run = run_persistent_and_one_per_row(k);
        const cuda::LogitPlan& plan = run.plan;
        EXPECT_TRUE(bitwise_same(run.one, run.persistent))
            << plan.resident_clusters << " resident clusters of " << plan.ctas << " CTAs";
        const std::int64_t prefetched = run.prefetched;
        // The prefetch fired where it should (forward only), not merely left the results alone.
        const std::int64_t expected = forward_only ? expected_prefetches(k, plan.resident_clusters) : 0;
        EXPECT_EQ(prefetched, expected) << plan.resident_clusters << " resident clusters";
        if (forward_only) {
          EXPECT_GT(expected, 0);
        }
      }
    }
}

// A poisoned row (a NaN logit: its loss is NaN) in the loop of a persistent cluster requests its
// next row's slices like any other row (every path runs the prefetch hook after its last read of
// the slices: the one exchange at T = 1, the S exchange of the two-pass rows, the range exchange
// of the others), so the rows after it see their own data: bitwise the results of one cluster
// per row, the prefetch count the host model's, and the launch ends (a row waiting for a copy
// that was never requested would hang until the test's timeout). Every logit row, forward only,
// on its plain path (no support mask, log-softmax) and on the case's own; the first three rows
// poisoned (each the first row of its cluster, whose second row follows: 1000 rows on 396
// resident clusters) and three more in the middle and at the end.
TEST_F(GpuPlans, PoisonedRowsInAPersistentClusterPrefetchTheirNextRow) {
  const std::int64_t V = 4096;
  for (DivergenceId id : logit_rows())
    for (bool plain : {true, false}) {
      Case c = forward_only(varied_case(id, DType::bf16, 2, 500, V, 90));
      if (plain) make_plain(c);
      Tensor* p = const_cast<Tensor*>(cuda::logit_roles(c).p);
      for (std::int64_t r : {0, 2, 3, 400, 401, 999}) p->set(r * V + 17, std::numeric_limits<double>::quiet_NaN());
      SCOPED_TRACE(label(c) + (plain ? " plain path" : " case's path"));
      const PersistentRun run = run_persistent_and_one_per_row(c);
      const cuda::LogitPlan& plan = run.plan;
      ASSERT_GT(plan.resident_clusters, 3) << "rows 0, 2, 3 must start clusters";
      EXPECT_TRUE(bitwise_same(run.one, run.persistent))
          << plan.resident_clusters << " resident clusters of " << plan.ctas << " CTAs";
      EXPECT_EQ(run.prefetched, expected_prefetches(c, plan.resident_clusters));
      EXPECT_GT(run.prefetched, 0);
      // The poison is where the CPU backend puts it (row 0's loss, or the reduced loss, NaN).
      const Outputs h = compute(cpu(), c);
      EXPECT_EQ(std::isnan(run.one.loss.get(0)), std::isnan(h.loss.get(0))) << "row 0 carries a NaN logit";
    }
}

// Forward-only KL and cross-entropy on the plain path at T = 1 (defers_row_loss): no CTA waits
// for its cluster, the rows are combined after the row kernel; the loss is bitwise the loss of
// the same case with gradients (the mailbox exchange: the same order), on the automatic plan
// (persistent grid) and with one cluster per row, and the tame rows are counted alike.
TEST_F(GpuPlans, DeferredForwardLossEqualsTheLossWithGradients) {
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::masked_cross_entropy})
    for (DType dt : {DType::bf16, DType::f32})
      for (std::int64_t V : {4096, 128256}) {
        Case c = varied_case(id, dt, 2, V == 4096 ? 300 : 8, V, 91);
        make_plain(c);
        Tensor* p = const_cast<Tensor*>(cuda::logit_roles(c).p);
        p->set(3 * V + 5, std::numeric_limits<double>::quiet_NaN());  // row 3 poisoned
        const Case f = forward_only(c);
        ASSERT_TRUE(cuda::defers_row_loss(cuda::logit_args_of(f, CudaOptions{})));
        SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
        for (int grid : {0, 1}) {
          std::int64_t tame_f = -1, tame_c = -1;
          CudaOptions of, oc;
          of.row_grid = oc.row_grid = grid;
          of.stream_rows = oc.stream_rows = 1;  // the cluster kernels (the streamed ones: StreamedRows...)
          of.tame_rows_out = &tame_f;
          oc.tame_rows_out = &tame_c;
          const Outputs a = compute(*cuda::make_cuda_backend_with(of), f);
          const Outputs b = compute(*cuda::make_cuda_backend_with(oc), c);
          ASSERT_FALSE(b.grads.empty());  // gradients wanted: the mailbox exchange, not deferred
          Outputs b_loss;
          b_loss.loss = b.loss;
          EXPECT_TRUE(bitwise_same(a, b_loss)) << "row grid " << grid;
          EXPECT_EQ(tame_f, tame_c) << "row grid " << grid;
          EXPECT_GT(tame_f, 0);
        }
        EXPECT_TRUE(gpu_passes(gpu(), f));
      }
}

// Every forward-only launch runs a kernel of its own (device_types.hpp row_variant): KL and
// cross-entropy on the plain path at T = 1 (and ts-KL's at any T with a normal reciprocal) the
// deferred kernel, every other the loss-only kernel
// (no gradient pass; the statistics pass sums only the loss's terms). On every path
// (the varied case: support mask, log_target = False, T = 0.7, a capped cross-entropy; its
// plain form; and the temperature rows' plain form at T = 2) and on both grids, the loss is bitwise the loss of the same case with gradients:
// the same sums in the same order. Row 3 carries a NaN logit (its loss NaN, as with gradients).
TEST_F(GpuPlans, ForwardOnlyLossEqualsTheLossWithGradients) {
  std::map<cuda::RowVariant, int> variants;
  std::map<cuda::RowPaths, int> paths;
  for (DivergenceId id : logit_rows())
    for (DType dt : {DType::bf16, DType::f32})
      for (int form : {0, 1, 2}) {  // varied; plain; plain at T = 2 (the temperature rows only)
        const bool plain = form >= 1, has_t = info(id).accepts(ParamKind::temperature);
        if (form == 2 && !has_t) continue;
        Case c = varied_case(id, dt, 2, 150, 4099, 95);
        if (plain) make_plain(c);
        if (form == 2) c.params.temperature = 2.0;  // RowPaths::plain_pow2_t
        Tensor* p = const_cast<Tensor*>(cuda::logit_roles(c).p);
        p->set(3 * 4099 + 5, std::numeric_limits<double>::quiet_NaN());
        const Case f = forward_only(c);
        // (logit_args_of leaves the device pointers unset; row_variant and row_paths read only
        // whether they are set: mark the support mask and, below, the gradients.)
        static const std::uint8_t support_marker = 0;
        const bool has_support = cuda::logit_roles(c).support != nullptr;
        cuda::LogitArgs args = cuda::logit_args_of(f, CudaOptions{});
        if (has_support) args.support = &support_marker;
        const cuda::RowVariant v = cuda::row_variant(args);
        EXPECT_EQ(v, cuda::defers_row_loss(args) ? cuda::RowVariant::deferred : cuda::RowVariant::loss_only);
        ++variants[v];
        // With gradients: the full kernel, for the same paths.
        cuda::LogitArgs with = cuda::logit_args_of(c, CudaOptions{});
        if (has_support) with.support = &support_marker;
        static char gradient_marker;
        with.grad_p = with.grad_q = &gradient_marker;
        EXPECT_EQ(cuda::row_variant(with), cuda::RowVariant::full);
        EXPECT_EQ(cuda::row_paths(with), cuda::row_paths(args));  // the same paths with and without gradients
        ++paths[cuda::row_paths(with)];
        SCOPED_TRACE(label(c) + (plain ? " plain" : " varied") + (form == 2 ? " T=2" : "") + " variant " +
                     std::to_string(static_cast<int>(v)));
        for (int grid : {0, 1}) {
          CudaOptions o;
          o.row_grid = grid;
          o.stream_rows = 1;  // the cluster kernels (the streamed one sums in its own tiles: StreamedRows...)
          const Outputs a = compute(*cuda::make_cuda_backend_with(o), f);
          const Outputs b = compute(*cuda::make_cuda_backend_with(o), c);
          ASSERT_FALSE(b.grads.empty());  // gradients wanted: the full kernel
          Outputs b_loss;
          b_loss.loss = b.loss;
          EXPECT_TRUE(bitwise_same(a, b_loss)) << "row grid " << grid;
        }
      }
  // The six rows other than KL, cross-entropy and ts-KL never defer (6 x 2 dtypes x 2 forms),
  // and ts-Jefferys at T = 2 runs the loss-only power-of-two kernel (x 2 dtypes).
  EXPECT_GE(variants[cuda::RowVariant::loss_only], 24 + 2);
  // KL and cross-entropy on the plain path, ts-KL at T = 2 and at T = 0.7 (by the reciprocal,
  // varied and plain) (x 2 dtypes).
  EXPECT_GE(variants[cuda::RowVariant::deferred], 4 + 2 + 4);
  EXPECT_EQ(variants[cuda::RowVariant::loss_only] + variants[cuda::RowVariant::deferred], 36 + 4);
  EXPECT_GE(paths[cuda::RowPaths::plain_unit_t], 14);   // the seven rows at T = 1, plain, x 2 dtypes
  EXPECT_EQ(paths[cuda::RowPaths::plain_pow2_t], 4);    // the two temperature rows at T = 2, x 2 dtypes
  EXPECT_EQ(paths[cuda::RowPaths::plain_recip_t], 8);   // the temperature rows at T = 0.7, both forms, x 2 dtypes
  EXPECT_EQ(paths[cuda::RowPaths::plain_scaled_t], 0);  // (no registry row of the other kinds takes T)
  // masked_kl and masked_jefferys varied (seed 95: log_target = False, T = 1), x 2 dtypes.
  EXPECT_EQ(paths[cuda::RowPaths::prob_unit_t], 4);
  // The four support rows varied (a support mask), x 2 dtypes.
  EXPECT_EQ(paths[cuda::RowPaths::general], 8);
  EXPECT_EQ(paths[cuda::RowPaths::plain_unit_t] + paths[cuda::RowPaths::plain_pow2_t] +
                paths[cuda::RowPaths::plain_recip_t] + paths[cuda::RowPaths::prob_unit_t] +
                paths[cuda::RowPaths::general],
            36 + 4);
}

// The streamed run (options os, a plan of `registers`) of case c and the cluster kernel's
// (stream_rows 1): both within the bound; the streamed run bitwise the same a second time and with
// the other register cap (a benchmark knob); the same tame rows (at least one); NaN losses where
// the CPU backend has them. Returns the streamed run's outputs.
Outputs expect_streamed_and_cluster_within_bound(const Backend& cpu, const Case& c, CudaOptions os,
                                                 int registers) {
  std::int64_t tame_s = -1, tame_c = -1;
  CudaOptions oc = os;
  oc.stream_rows = 1;
  oc.tame_rows_out = &tame_c;
  CudaOptions other = os;
  other.stream_registers = registers == 80 ? 64 : 80;
  os.tame_rows_out = &tame_s;
  const auto streamed = cuda::make_cuda_backend_with(os);
  const Outputs a = compute(*streamed, c);
  const Expected e = compute_reference(c);
  EXPECT_TRUE(gpu_passes(a, c, e));
  EXPECT_TRUE(gpu_passes(compute(*cuda::make_cuda_backend_with(oc), c), c, e));
  EXPECT_TRUE(bitwise_same(a, compute(*streamed, c))) << "a second run differs";
  EXPECT_TRUE(bitwise_same(a, compute(*cuda::make_cuda_backend_with(other), c))) << "the register caps differ";
  EXPECT_EQ(tame_s, tame_c);
  EXPECT_GT(tame_s, 0);
  const Outputs h = compute(cpu, c);
  for (std::int64_t k = 0; k < h.loss.numel(); ++k)
    EXPECT_EQ(std::isnan(a.loss.get(k)), std::isnan(h.loss.get(k))) << "loss element " << k;
  return a;
}

// The streamed kernel of the deferred rows (stream_rows_kernel.cuh), the automatic plan of
// forward-only KL, cross-entropy (T = 1) and the temperature KL row (T = 2): at V = 4096 (one
// tile, short of a group), 9001 (unaligned 16-bit rows: every tile by the unstaged passes),
// 128256 (4 tiles of 4 groups, the last 3 groups and a rest) and 256000 (8 tiles), bf16, f16 and
// f32: within the bound, bitwise the
// same on a second run, the poisoned row NaN as on the CPU, and the tame rows counted as by the
// deferred cluster kernel (stream_rows 1), which is within the bound too; the kernels of the other
// register cap (stream_registers 64 / 80) give the same bits.
TEST_F(GpuPlans, StreamedRowsAreWithinTheBoundAndReproducible) {
  int cases = 0;
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::masked_cross_entropy,
                          DivergenceId::temperature_scaled_masked_kl_divergence})
    for (DType dt : {DType::bf16, DType::f16, DType::f32})
      for (std::int64_t V : {4096, 9001, 128256, 256000}) {
        Case c = varied_case(id, dt, 2, V <= 9001 ? 100 : 3, V, 97 + static_cast<std::uint64_t>(V));
        make_plain(c);
        const bool temperature_row = id == DivergenceId::temperature_scaled_masked_kl_divergence;
        if (temperature_row) c.params.temperature = 2.0;  // (no poison: its token mean would be NaN)
        else const_cast<Tensor*>(cuda::logit_roles(c).p)->set(3 * V + 5, std::numeric_limits<double>::quiet_NaN());
        const Case f = forward_only(c);
        SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
        CudaOptions os;
        const cuda::LogitPlan plan = cuda::plan_for_case(f, os);
        ASSERT_TRUE(plan.streamed);
        EXPECT_EQ(plan.registers, dt == DType::f32 ? 64 : 80);
        EXPECT_EQ(plan.ctas, (V + 32767) / 32768);  // tiles of 4 groups of 8192 columns
        (void)expect_streamed_and_cluster_within_bound(cpu(), f, os, plan.registers);
        ++cases;
      }
  EXPECT_EQ(cases, 3 * 3 * 4);
}

// The centred forward (device_types.hpp centred_forward_launch; bench/RESULTS.md steps 79 and 80),
// the automatic plan of forward-only jefferys_divergence (T = 1), the temperature Jefferys row
// (T = 2), masked_jefferys_divergence on the probability path (log_target = False, its default)
// and squared_hellinger_distance: V = 4096, 9001, 128256 and 256000, bf16, f16 and f32, with row 1 not tame (a column
// that is -inf on both sides: the combine hands it to the loss-only cluster kernel,
// launch_centred_fallback). Within the bound, as the cluster kernel (stream_rows 1) is; bitwise the
// same on a second run and with the other register cap; the same tame rows; NaN where the CPU
// backend has it (row 3 poisoned, but for the token-mean temperature row); identical sides give a
// loss of exactly 0 (a centre of exactly 1: the defect the H200 gate found, step 79).
TEST_F(GpuPlans, CentredForwardIsWithinTheBoundAndReproducible) {
  int cases = 0;
  for (DivergenceId id :
       {DivergenceId::jefferys_divergence, DivergenceId::temperature_scaled_masked_jefferys_divergence,
        DivergenceId::masked_jefferys_divergence, DivergenceId::squared_hellinger_distance})
    for (DType dt : {DType::bf16, DType::f16, DType::f32})
      for (std::int64_t V : {4096, 9001, 128256, 256000}) {
        Case c = varied_case(id, dt, 2, V <= 9001 ? 100 : 3, V, 197 + static_cast<std::uint64_t>(V));
        make_plain(c);
        const bool temperature_row = id == DivergenceId::temperature_scaled_masked_jefferys_divergence;
        if (temperature_row) c.params.temperature = 2.0;
        if (id == DivergenceId::masked_jefferys_divergence) c.params.log_target = false;
        Tensor* p = const_cast<Tensor*>(cuda::logit_roles(c).p);
        Tensor* q = const_cast<Tensor*>(cuda::logit_roles(c).q);
        p->set(1 * V + 7, -std::numeric_limits<double>::infinity());
        q->set(1 * V + 7, -std::numeric_limits<double>::infinity());
        const Case z = with_identical_sides(forward_only(c));  // (before the poison)
        if (!temperature_row) p->set(3 * V + 5, std::numeric_limits<double>::quiet_NaN());
        const Case f = forward_only(c);
        SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
        CudaOptions os;
        ASSERT_TRUE(cuda::centred_forward_launch(cuda::logit_args_of(f, os)));
        const cuda::LogitPlan plan = cuda::plan_for_case(f, os);
        ASSERT_TRUE(plan.streamed);
        EXPECT_EQ(plan.registers, dt == DType::f32 ? 64 : 80);
        (void)expect_streamed_and_cluster_within_bound(cpu(), f, os, plan.registers);
        const Outputs zero = compute(*cuda::make_cuda_backend_with(os), z);
        for (std::int64_t k = 0; k < zero.loss.numel(); ++k)
          EXPECT_EQ(zero.loss.get(k), 0.0) << "identical sides, loss element " << k;
        ++cases;
      }
  EXPECT_EQ(cases, 4 * 3 * 4);
}

// The streamed kernel with gradients (stream_grad_rows_kernel.cuh; forced, stream_rows 2: the
// automatic plan keeps the cluster kernel, bench/RESULTS.md step 56) of KL, cross-entropy (T = 1)
// and the temperature KL row (T = 2) with gradients: V = 4096 and 9001 with
// 100 rows (one tile per row), 128256 and 256000 with 6 rows (8-32 tiles per row); bf16, f16,
// f32. Within the bound (loss and both gradients); bitwise the same on a second run and with the
// other register cap; the loss bitwise the forward-only streamed kernel's at the same G; NaN loss
// and gradients where the CPU backend has them; the tame rows counted as by the cluster kernel
// (stream_rows 1), which is within the bound too; identical sides (KL) give exact zeros. (Many
// items per CTA: StreamedRowsWithGradientsDoNotDependOnTheSchedule.)
TEST_F(GpuPlans, StreamedRowsWithGradientsAreWithinTheBoundAndReproducible) {
  int cases = 0;
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::masked_cross_entropy,
                          DivergenceId::temperature_scaled_masked_kl_divergence})
    for (DType dt : {DType::bf16, DType::f16, DType::f32})
      for (std::int64_t V : {4096, 9001, 128256, 256000}) {
        Case c = varied_case(id, dt, 2, V <= 9001 ? 50 : 3, V, 197 + static_cast<std::uint64_t>(V));
        make_plain(c);
        divcheck::testing::want_all_grads(c, cases % 2 ? -0.5 : 1.5);
        const bool temperature_row = id == DivergenceId::temperature_scaled_masked_kl_divergence;
        if (temperature_row) c.params.temperature = 2.0;
        const Case z = with_identical_sides(c);
        if (!temperature_row)  // (the temperature row's token mean would be NaN)
          const_cast<Tensor*>(cuda::logit_roles(c).p)->set(3 * V + 5, std::numeric_limits<double>::quiet_NaN());
        std::cout << "[ case ] " << label(c) << " V=" << V << std::endl;
        SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
        CudaOptions os;
        ASSERT_FALSE(cuda::plan_for_case(c, os).streamed);  // automatic: the cluster kernel
        os.stream_rows = 2;
        const cuda::LogitPlan plan = cuda::plan_for_case(c, os);
        ASSERT_TRUE(plan.streamed);
        EXPECT_EQ(plan.registers, dt == DType::f32 ? 64 : 80);
        const std::int64_t slice = dt == DType::f32 ? 8192 : 16384;  // stream_grad_groups: 1 or 2 groups
        EXPECT_EQ(plan.slice, slice);
        EXPECT_EQ(plan.ctas, (V + slice - 1) / slice);
        EXPECT_GT(plan.resident_clusters, 100);  // the grid: the CTAs the device holds
        const Outputs a = expect_streamed_and_cluster_within_bound(cpu(), c, os, plan.registers);
        CudaOptions same_g;  // the forward-only streamed kernel at the same G: the same loss
        same_g.stream_groups = static_cast<int>(slice / 8192);
        Outputs a_loss;
        a_loss.loss = a.loss;
        EXPECT_TRUE(bitwise_same(a_loss, compute(*cuda::make_cuda_backend_with(same_g), forward_only(c))))
            << "the loss differs from the forward-only streamed kernel's";
        const Outputs h = compute(cpu(), c);
        for (const auto& [name, g] : h.grads) {
          const Tensor& ga = a.grads.at(name);
          for (std::int64_t k = 0; k < g.numel(); ++k)
            ASSERT_EQ(std::isnan(ga.get(k)), std::isnan(g.get(k))) << name << " element " << k;
        }
        if (id != DivergenceId::masked_cross_entropy) {  // (cross-entropy of identical sides is the entropy)
          const Outputs az = compute(*cuda::make_cuda_backend_with(os), z);
          for (std::int64_t k = 0; k < az.loss.numel(); ++k) EXPECT_EQ(az.loss.get(k), 0.0) << "identical sides, " << k;
          for (const auto& [name, g] : az.grads)
            for (std::int64_t k = 0; k < g.numel(); ++k)
              ASSERT_EQ(g.get(k), 0.0) << "identical sides, " << name << " " << k;
        }
        ++cases;
      }
  EXPECT_EQ(cases, 3 * 3 * 4);
}

// Position t of every (B, T, ...) input takes position t mod `period`'s values (the logits, the
// mask): a case whose rows repeat, so that a row's outputs must repeat too.
void repeat_positions(Case& c, std::int64_t period) {
  for (auto& [name, t] : c.inputs) {
    if (t.rank() < 2) continue;
    const std::int64_t batch = t.dim(0), seq = t.dim(1), inner = t.numel() / (batch * seq);
    const std::size_t row_bytes = static_cast<std::size_t>(inner) * element_size(t.dtype());
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t s = period; s < seq; ++s)
        std::memcpy(t.data() + ((b * seq + s) * row_bytes), t.data() + ((b * seq + s % period) * row_bytes), row_bytes);
  }
}

// The streamed kernel with gradients over many items per CTA (phase B one step behind phase A,
// CTAs at different phases): 1200 rows of V = 4096 (one tile each, ~3 items per resident CTA)
// and 200 rows of V = 128256 (8 or 16 tiles each, 4-8 items per CTA), bf16 and f32, whose rows
// repeat with period 3 within each sequence (a masked and a poisoned position among them). Every
// row's gradients are bitwise those of the first row with its contents, wherever its tiles ran;
// bitwise the same on a second run; the loss bitwise the forward-only streamed kernel's at the
// same G.
TEST_F(GpuPlans, StreamedRowsWithGradientsDoNotDependOnTheSchedule) {
  int cases = 0;
  for (DType dt : {DType::bf16, DType::f32})
    for (std::int64_t V : {4096, 128256}) {
      const std::int64_t seq = V == 4096 ? 600 : 100;
      Case c = varied_case(DivergenceId::masked_kl_divergence, dt, 2, seq, V, 211 + static_cast<std::uint64_t>(V));
      make_plain(c);
      divcheck::testing::want_all_grads(c, 0.75);
      const_cast<Tensor*>(cuda::logit_roles(c).p)->set(1 * V + 5, std::numeric_limits<double>::quiet_NaN());
      Tensor* mask = const_cast<Tensor*>(cuda::logit_roles(c).mask);
      if (mask) {
        mask->set(1, 1.0);  // position (0, 1), poisoned, valid
        mask->set(2, 0.0);  // position (0, 2) masked
      }
      repeat_positions(c, 3);
      std::cout << "[ case ] " << label(c) << " V=" << V << std::endl;
      SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
      CudaOptions o;
      o.stream_rows = 2;
      const cuda::LogitPlan plan = cuda::plan_for_case(c, o);
      ASSERT_TRUE(plan.streamed);
      ASSERT_GT(2 * seq * plan.ctas, 2 * plan.resident_clusters) << "at least two items per CTA";
      const auto streamed = cuda::make_cuda_backend_with(o);
      const Outputs a = compute(*streamed, c);
      EXPECT_TRUE(bitwise_same(a, compute(*streamed, c))) << "a second run differs";
      CudaOptions same_g;
      same_g.stream_groups = static_cast<int>(plan.slice / 8192);
      Outputs a_loss;
      a_loss.loss = a.loss;
      EXPECT_TRUE(bitwise_same(a_loss, compute(*cuda::make_cuda_backend_with(same_g), forward_only(c))));
      int nan_rows = 0, zero_rows = 0;
      for (const auto& [name, g] : a.grads) {
        const std::size_t row_bytes = static_cast<std::size_t>(V) * element_size(g.dtype());
        for (std::int64_t b = 0; b < 2; ++b)
          for (std::int64_t s = 3; s < seq; ++s)
            ASSERT_EQ(std::memcmp(g.data() + (b * seq + s) * row_bytes, g.data() + (b * seq + s % 3) * row_bytes,
                                  row_bytes),
                      0)
                << name << " row (" << b << ", " << s << ") differs from row (" << b << ", " << s % 3 << ")";
        nan_rows += std::isnan(g.get(1 * V)) ? 1 : 0;
        zero_rows += g.get(2 * V) == 0.0 && g.get(2 * V + V - 1) == 0.0 ? 1 : 0;
      }
      EXPECT_EQ(nan_rows, 2);   // both gradients of the poisoned row
      EXPECT_EQ(zero_rows, mask ? 2 : 0);  // and of the masked one
      ++cases;
    }
  EXPECT_EQ(cases, 4);
}

TEST_F(GpuPlans, BenchmarkShapesKeepRowsOnChip) {
  // (V, dtype) of the benchmarks; the support rows without a support mask, as benchmarked.
  for (std::int64_t V : {128256, 256000})
    for (DType dt : {DType::bf16, DType::f32}) {
      Case c = varied_case(DivergenceId::total_variation, dt, 1, 1, V, 60);
      c.inputs.erase("support_mask");
      SCOPED_TRACE(label(c) + " V=" + std::to_string(V));
      const cuda::LogitPlan plan = cuda::plan_for_case(c, CudaOptions{});
      std::cout << "[ plan ] V=" << V << " " << short_name(dt) << ": " << plan.ctas << " CTAs x " << plan.threads
                << " threads per row, "
                << (plan.staged ? "staged" : "NOT staged (multi-pass fallback)") << ", slice " << plan.slice
                << " columns (" << plan.staged_columns << " on chip), " << plan.dynamic_smem_bytes
                << " bytes of shared memory per CTA\n";
      // Three 256-thread CTAs per SM with whole slices, except f32: at 256000 (2 x 4 x 16000 bytes
      // fit one CTA per SM) the partly staged plan, 16 x 256 with the first 8192 columns on chip
      // (three per SM; this total variation launch is not a one-pass row's); at 128256 (whole
      // slices fit three per SM only with 16 CTAs) the partly staged plan of 8 x 256, two per SM
      // with gradients (bench/RESULTS.md step 62). The 16-CTA cluster is the one a device may
      // refuse.
      EXPECT_TRUE(plan.staged);
      EXPECT_EQ(plan.threads, 256);
      if (V == 256000 && dt == DType::f32) {
        EXPECT_EQ(plan.ctas, 16);
        EXPECT_EQ(plan.staged_columns, 8192);
      } else if (dt == DType::f32) {  // 16032 columns per CTA; two per SM keep 13056, three 8192
        EXPECT_EQ(plan.ctas, 8);
        EXPECT_EQ(plan.staged_columns, c.wants_grad.empty() ? 8192 : 13056);
      } else {
        EXPECT_EQ(plan.staged_columns, plan.slice);
      }
      EXPECT_TRUE(gpu_passes(gpu(), c));
    }
}

}  // namespace
}  // namespace divcheck::gputest

// The execution plans of the logit row kernel (CTAs per row x shared-memory staging): every
// plan is within the verdict bound of the reference; plans with the same summation order are
// bitwise equal (staged and unstaged with the same number of CTAs; the automatic plan and the
// same plan forced; the persistent grid, with its prefetch, and one cluster per row); the
// automatic plan at the two benchmark shapes keeps rows on chip.
#include <iostream>
#include <map>

#include "core/errors.hpp"
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

// The persistent grid (LogitArgs::row_grid 2: fewer clusters than rows, each looping over its
// rows) gives bitwise the results of one cluster per row (which the other tests hold to the
// reference), forward only (where a cluster requests its next row's slices ahead: the
// prefetch) and with gradients. 1000 rows exceed the clusters an H200 holds at once at this V
// (one-CTA clusters, three per SM: 396), so every cluster processes two or three rows; the masked rows of varied_case and an extra masked run of
// rows are skipped by the prefetch; the odd V makes every other row unaligned (no bulk copy).
TEST_F(GpuPlans, PersistentGridEqualsOneClusterPerRow) {
  for (DivergenceId id : logit_rows())
    for (std::int64_t V : {4096, 4099}) {
      Case c = varied_case(id, DType::bf16, 2, 500, V, 70 + static_cast<std::uint64_t>(V));
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
        std::int64_t prefetched = -1;
        CudaOptions one, persistent;
        one.row_grid = 1;
        persistent.row_grid = 2;
        persistent.prefetched_rows_out = &prefetched;
        const cuda::LogitPlan plan = cuda::plan_for_case(k, persistent);
        ASSERT_TRUE(plan.persistent);
        ASSERT_TRUE(plan.staged);
        ASSERT_LE(2 * plan.resident_clusters, 1000) << "every cluster must loop over two rows or more";
        const Outputs a = compute(*cuda::make_cuda_backend_with(one), k);
        const Outputs b = compute(*cuda::make_cuda_backend_with(persistent), k);
        EXPECT_TRUE(bitwise_same(a, b)) << plan.resident_clusters << " resident clusters of " << plan.ctas << " CTAs";
        // The prefetch fired where it should (forward only), not merely left the results alone.
        const std::int64_t expected = forward_only ? expected_prefetches(k, plan.resident_clusters) : 0;
        EXPECT_EQ(prefetched, expected) << plan.resident_clusters << " resident clusters";
        if (forward_only) {
          EXPECT_GT(expected, 0);
        }
      }
    }
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
                << " columns, " << plan.dynamic_smem_bytes << " bytes of shared memory per CTA\n";
      // 2 bytes x 2 rows x V / C fits 227 KB with C = 4 (128256) or 8 (256000); f32 needs
      // C = 8 resp. 16, and the 16-CTA cluster is the one a device may refuse.
      if (!(V == 256000 && dt == DType::f32)) {
        EXPECT_TRUE(plan.staged);
      }
      EXPECT_TRUE(gpu_passes(gpu(), c));
    }
}

}  // namespace
}  // namespace divcheck::gputest

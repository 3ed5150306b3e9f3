// The CUDA backend's kernels run by the host emulator (no GPU needed; label "cuda_emulation"):
//   * one CTA per row (the CPU backend's summation order, the host's elementary functions):
//     bitwise equal to the CPU backend for every row of issue 3 and every dtype, staged and
//     unstaged, including masks, support masks, both log_target paths, the cap, temperatures;
//   * clusters of 2 (every logit row), 4 and 16 CTAs (empty slices): within the verdict bound of
//     the float128 reference, and staged bitwise equal to unstaged;
//   * exact zeros on identical inputs, garbage at masked positions inert;
//   * tvd_prob bitwise equal to the CPU backend for every reduction.
// The emulator runs one OS thread per CUDA thread (barriers are futex waits), so the cases are
// few and small: about 10 minutes of CPU time in all on two cores.
#include <gtest/gtest.h>

#include "tests/cpu/test_cases.hpp"
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
void expect_bitwise_like_cpu(const Backend& emulated, DType dt, std::uint64_t seed) {
  for (DivergenceId id : gpu_rows()) {
    Case c = divcheck::testing::random_case(id, dt, seed);
    divcheck::testing::want_all_grads(c, seed == 1 ? -1.25 : 0.75);
    SCOPED_TRACE(label(c) + " seed " + std::to_string(seed));
    EXPECT_TRUE(bitwise_same(compute(emulated, c), compute(cpu_backend(), c)));
  }
}

TEST(KernelEmulation, OneCtaPerRowStagedIsBitwiseEqualToCpuBackend) {
  const auto staged = make_emulated_cuda_backend(CudaOptions{1, true});
  expect_bitwise_like_cpu(*staged, DType::f32, 0);
  expect_bitwise_like_cpu(*staged, DType::f32, 1);
  expect_bitwise_like_cpu(*staged, DType::bf16, 1);
  expect_bitwise_like_cpu(*staged, DType::f16, 0);
}

TEST(KernelEmulation, OneCtaPerRowUnstagedIsBitwiseEqualToCpuBackend) {
  const auto unstaged = make_emulated_cuda_backend(CudaOptions{1, false});
  expect_bitwise_like_cpu(*unstaged, DType::bf16, 0);
  expect_bitwise_like_cpu(*unstaged, DType::f16, 1);
}

TEST(KernelEmulation, OneCtaPerRowLongRowsAreBitwiseEqualToCpuBackend) {
  // V = 2100: three columns per lane, a partial last warp, vectorised chunks and a tail.
  const auto staged = make_emulated_cuda_backend(CudaOptions{1, true});
  for (DivergenceId id : gpu_rows()) {
    const Case c = varied_case(id, id == DivergenceId::total_variation ? DType::bf16 : DType::f32, 1, 2, 2100, 9);
    SCOPED_TRACE(label(c) + " V=2100");
    EXPECT_TRUE(bitwise_same(compute(*staged, c), compute(cpu_backend(), c)));
  }
}

// A cluster plan: judged against the reference; staged and unstaged bitwise equal.
void expect_cluster_plan_sound(DivergenceId id, int ctas, std::int64_t V) {
  const Case c = varied_case(id, DType::bf16, 1, 2, V, 70);
  SCOPED_TRACE(label(c) + " " + std::to_string(ctas) + " CTAs, V=" + std::to_string(V));
  const Outputs a = compute(*make_emulated_cuda_backend(CudaOptions{ctas, true}), c);
  const Outputs b = compute(*make_emulated_cuda_backend(CudaOptions{ctas, false}), c);
  EXPECT_TRUE(gpu_passes(a, c, compute_reference(c)));
  EXPECT_TRUE(bitwise_same(a, b)) << "staged and unstaged differ";
}

TEST(KernelEmulation, ClustersOfTwoAreWithinBoundForEveryLogitRow) {
  for (DivergenceId id : gpu_rows())
    if (id != DivergenceId::tvd_prob) expect_cluster_plan_sound(id, 2, 3001);
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
      const Outputs o = compute(*b2, with_identical_sides(base));
      EXPECT_EQ(o.loss.get(0), 0.0);
      for (const auto& [role, g] : o.grads)
        for (std::int64_t i = 0; i < g.numel(); ++i) ASSERT_EQ(g.get(i), 0.0) << role << "[" << i << "]";
    }
    const Case dirty = with_garbage_at_masked(base);
    const Outputs a = compute(*b2, with_zeros_at_masked(base)), d = compute(*b2, dirty);
    EXPECT_TRUE(bitwise_same(a, d));
    EXPECT_EQ(masked_gradients_are_plus_zero(dirty, d), "");
  }
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

// Structural guarantees of the CUDA backend (docs/semantics.md), checked exactly:
//   identical inputs give loss and gradients exactly 0; garbage (NaN, inf, 1e30) at masked
//   positions changes nothing and masked gradient rows are +0; an all-masked batch gives 0;
//   a NaN at a valid position poisons exactly that position; runs are bitwise reproducible;
//   and the seed bug: tvd_prob's gradient is exactly 0 where q == p.
#include <cmath>

#include "tests/cpu/test_cases.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "tests/cuda/gpu_test_support.hpp"

namespace divcheck::gputest {
namespace {

using GpuStructure = GpuTest;

::testing::AssertionResult all_exactly_zero(const Tensor& t, const std::string& what) {
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (t.get(i) != 0.0) return ::testing::AssertionFailure() << what << "[" << i << "] = " << t.get(i) << ", not 0";
  return ::testing::AssertionSuccess();
}

TEST_F(GpuStructure, IdenticalInputsGiveExactZeros) {
  for (DivergenceId id : gpu_rows()) {
    if (!info(id).props.zero_on_identical) continue;  // cross-entropy: the entropy of p
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (std::int64_t V : {7, 3000})
        for (bool plain : {false, true}) {  // plain: no support mask (the tame one-exchange rows)
          Case c = with_identical_sides(varied_case(id, dt, 2, 3, V, 5));
          if (plain) make_plain(c);
          SCOPED_TRACE(label(c) + " V=" + std::to_string(V) + (plain ? " plain" : ""));
          const Outputs o = compute(gpu(), c);
          EXPECT_TRUE(all_exactly_zero(o.loss, "loss"));
          for (const auto& [role, g] : o.grads) EXPECT_TRUE(all_exactly_zero(g, "grad " + role));
        }
  }
}

TEST_F(GpuStructure, GarbageAtMaskedPositionsIsInert) {
  for (DivergenceId id : gpu_rows())
    for (DType dt : {DType::f32, DType::bf16})
      for (std::int64_t V : {9, 2100}) {
        const Case base = varied_case(id, dt, 2, 3, V, 8);
        const Case clean = with_zeros_at_masked(base), dirty = with_garbage_at_masked(base);
        SCOPED_TRACE(label(base) + " V=" + std::to_string(V));
        const Outputs a = compute(gpu(), clean), b = compute(gpu(), dirty);
        EXPECT_TRUE(bitwise_same(a, b));
        EXPECT_EQ(masked_gradients_are_plus_zero(dirty, b), "");
        EXPECT_FALSE(std::isnan(b.loss.get(0)));
      }
}

TEST_F(GpuStructure, AllMaskedBatchGivesZero) {
  for (DivergenceId id : gpu_rows()) {
    Case c = varied_case(id, DType::f32, 2, 2, 50, 2);
    if (id == DivergenceId::tvd_prob) {
      for (std::int64_t i = 0; i < 4; ++i) c.inputs.at("labels").set(i, -100.0);
    } else {
      for (std::int64_t i = 0; i < 4; ++i) c.inputs.at(divcheck::testing::mask_role(id)).set(i, 0.0);
    }
    c = with_garbage_at_masked(c);
    SCOPED_TRACE(label(c));
    const Outputs o = compute(gpu(), c);
    EXPECT_TRUE(all_exactly_zero(o.loss, "loss"));
    for (const auto& [role, g] : o.grads) EXPECT_TRUE(all_exactly_zero(g, "grad " + role));
    EXPECT_EQ(masked_gradients_are_plus_zero(c, o), "");
  }
}

TEST_F(GpuStructure, NanAtAValidPositionPoisonsOnlyThatPosition) {
  for (DivergenceId id : gpu_rows()) {
    if (id == DivergenceId::tvd_prob) continue;  // elementwise: covered by the nan_elements family
    Case c = varied_case(id, DType::f32, 1, 3, 1500, 4);
    c.params.reduction = info(id).props.has_reduction_none ? "mean" : c.params.reduction;
    const std::string q = divcheck::testing::q_role(id);
    const std::int64_t V = 1500;
    c.inputs.at(q).set(2 * V + 1234, std::nan(""));  // position (0, 2), valid
    SCOPED_TRACE(label(c));
    const Outputs o = compute(gpu(), c);
    EXPECT_TRUE(std::isnan(o.loss.get(0)));
    for (const auto& [role, g] : o.grads) {
      for (std::int64_t v = 0; v < V; ++v) {
        ASSERT_TRUE(std::isnan(g.get(2 * V + v))) << role << " column " << v;
        ASSERT_FALSE(std::isnan(g.get(v))) << role << " position 0 column " << v;
      }
    }
    EXPECT_TRUE(gpu_passes(gpu(), c));
  }
}

TEST_F(GpuStructure, BitwiseReproducible) {
  for (DivergenceId id : gpu_rows())
    for (DType dt : {DType::f32, DType::bf16}) {
      const Case c = varied_case(id, dt, 2, 3, 5003, 21);
      SCOPED_TRACE(label(c));
      const Outputs a = compute(gpu(), c);
      (void)compute(gpu(), varied_case(id, dt, 3, 1, 777, 22));  // unrelated work in between
      const auto other = make_cuda_backend();
      const Outputs b = compute(*other, c);
      EXPECT_TRUE(bitwise_same(a, b));
    }
}

// The bug report (seeds/000): LigerTVDLoss's gradient is -scale/2 instead of 0 where p == q.
TEST_F(GpuStructure, TvdProbGradientIsExactlyZeroAtTies) {
  const std::int64_t N = 6, V = 1000;
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (const char* reduction : {"batchmean", "sum", "mean", "none"}) {
      Case c = varied_case(DivergenceId::tvd_prob, dt, 2, 3, V, 31);
      c.params.reduction = reduction;
      divcheck::testing::want_all_grads(c, 1.0);
      // Row 0: q == p everywhere; row 2: q == p at every third column (exact copies).
      const Tensor& p = c.inputs.at("p");
      Tensor& q = c.inputs.at("q");
      auto tie = [&](std::int64_t i, std::int64_t v) { return i == 0 || (i == 2 && v % 3 == 0); };
      for (std::int64_t i = 0; i < N; ++i)
        for (std::int64_t v = 0; v < V; ++v)
          if (tie(i, v)) q.set(i * V + v, p.get(i * V + v));
      SCOPED_TRACE(label(c) + " reduction " + reduction);
      const Outputs o = compute(gpu(), c);
      const Tensor& g = o.grads.at("p");
      for (std::int64_t i = 0; i < N; ++i)
        for (std::int64_t v = 0; v < V; ++v) {
          const double x = g.get(i * V + v);
          const bool equal = p.get(i * V + v) == q.get(i * V + v);  // the designated ties, and chance ones
          if (tie(i, v)) {
            ASSERT_TRUE(equal);
          }
          if (equal || i == 1) {  // row 1 is ignored: +0 as well
            ASSERT_TRUE(x == 0.0 && !std::signbit(x)) << "row " << i << " column " << v << ": " << x;
          } else {
            ASSERT_NE(x, 0.0) << "row " << i << " column " << v;
          }
        }
      EXPECT_TRUE(bitwise_same(o, compute(cpu(), c)));
      EXPECT_TRUE(gpu_passes(o, c, compute_reference(c)));
    }
}

}  // namespace
}  // namespace divcheck::gputest

// tvd_prob and the bug report (seeds/000): LigerTVDLoss's gradient is wrong exactly at ties
// p == q because it selects between +scale/2 and -scale/2 with no zero branch. The CPU backend
// must give exactly 0 there: for identical inputs (self-distillation at step 0) and for padded
// vocabulary slots (0 in both distributions).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/backend.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

Case tvd_case(const std::vector<double>& p, const std::vector<double>& q, std::int64_t N, std::int64_t V, const std::string& red) {
  Case c;
  c.id = DivergenceId::tvd_prob;
  c.inputs["p"] = make_tensor(DType::f32, {N, V}, p);
  c.inputs["q"] = make_tensor(DType::f32, {N, V}, q);
  c.params.reduction = red;
  want_all_grads(c);
  return c;
}

TEST(CpuTvdProb, SeedBugReproductionIdenticalRowsHaveZeroGradient) {
  // p = softmax(randn(8, 512)), q = p.clone(): loss 0 and all 4096 gradient elements exactly 0
  // (the buggy kernel returns -0.5 * scale = -0.0625 for batchmean in every element).
  const std::vector<double> p = softmax_rows(randn(8 * 512, 0), 8, 512);
  for (const char* red : {"batchmean", "sum", "mean", "none"}) {
    const Outputs o = compute(*make_cpu_backend(), tvd_case(p, p, 8, 512, red));
    for (std::int64_t i = 0; i < o.loss.numel(); ++i) ASSERT_EQ(o.loss.get(i), 0.0) << red;
    const Tensor& g = o.grads.at("p");
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < g.numel(); ++i) wrong += g.get(i) != 0.0;
    EXPECT_EQ(wrong, 0) << red << ": elements wrong " << wrong << " / " << g.numel();
  }
}

TEST(CpuTvdProb, PaddedVocabularyTiesAreZeroOthersAreHalfScale) {
  // The last 64 of 512 columns are exactly 0 in both distributions (padded vocabulary): their
  // gradient is exactly 0; every other column has p != q and gets +-(1/2)(1/N) (batchmean).
  const std::int64_t N = 8, V = 512, pad = 64;
  std::vector<double> zp = randn(N * V, 1), zq = randn(N * V, 2);
  for (std::int64_t r = 0; r < N; ++r)
    for (std::int64_t v = V - pad; v < V; ++v) zp[r * V + v] = zq[r * V + v] = -INFINITY;
  const Outputs o = compute(*make_cpu_backend(), tvd_case(softmax_rows(zp, N, V), softmax_rows(zq, N, V), N, V, "batchmean"));
  const Tensor& g = o.grads.at("p");
  for (std::int64_t r = 0; r < N; ++r)
    for (std::int64_t v = 0; v < V; ++v) {
      const double x = g.get(r * V + v);
      if (v >= V - pad) EXPECT_EQ(x, 0.0) << "padded column " << v;
      else EXPECT_EQ(std::fabs(x), 0.5 / N) << "column " << v;
    }
}

TEST(CpuTvdProb, NoValidRowIsZeroNotAnError) {
  Case c = tvd_case(softmax_rows(randn(12, 3), 3, 4), softmax_rows(randn(12, 4), 3, 4), 3, 4, "batchmean");
  c.inputs["labels"] = make_tensor(DType::i32, {3}, {-100, -100, -100});
  for (const char* red : {"batchmean", "sum", "mean"}) {
    c.params.reduction = red;
    const Outputs o = compute(*make_cpu_backend(), c);
    EXPECT_EQ(o.loss.get(0), 0.0) << red;
    for (std::int64_t i = 0; i < 12; ++i) EXPECT_EQ(o.grads.at("p").get(i), 0.0) << red;
  }
}

}  // namespace
}  // namespace divcheck::testing

// Structural zeros must be exact: identical inputs give loss 0 and gradients exactly 0 on every
// row that declares zero_on_identical, in every dtype, on both log_target paths, with support
// masks and padded (-inf) vocabulary columns, for vocabularies shorter and longer than the
// 1024 lanes of the row sums. Columns that are -inf on both sides get exactly 0 gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/backend.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

// B*T*V logits of scale 3 with the last `padded` columns of every row at -inf.
std::vector<double> padded_logits(std::int64_t rows, std::int64_t V, std::int64_t padded, std::uint64_t seed) {
  std::vector<double> z = randn(static_cast<std::size_t>(rows * V), seed, 3.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t v = V - padded; v < V; ++v) z[r * V + v] = -INFINITY;
  return z;
}

void expect_all_zero(const Tensor& t, const std::string& what) {
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) wrong += t.get(i) != 0.0;
  EXPECT_EQ(wrong, 0) << what << ": " << wrong << " of " << t.numel() << " elements are not exactly 0";
}

TEST(CpuExactZeros, IdenticalRowsGiveExactZeros) {
  for (DivergenceId id : logit_rows()) {
    const bool zero_loss = info(id).props.zero_on_identical;
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (std::int64_t V : {7, 1500}) {
        const std::int64_t B = 2, T = 3;
        const std::vector<double> z = padded_logits(B * T, V, 3, static_cast<std::uint64_t>(V) + 11);
        Case c = logit_case(id, B, T, V, dt, z, z);
        if (info(id).role("support_mask")) {
          std::vector<int> s(static_cast<std::size_t>(B * T * V));
          for (std::size_t i = 0; i < s.size(); ++i) s[i] = (i * 7) % 5 != 0;
          c.inputs["support_mask"] = make_mask({B, T, V}, s);
        }
        for (auto k : info(id).params)
          if (k == ParamKind::temperature) c.params.temperature = 0.37;
        for (bool log_target : {true, false}) {
          if (!log_target && !info(id).props.has_log_target) continue;
          c.params.log_target = log_target;
          want_all_grads(c, 1.7);
          const Outputs o = compute(*make_cpu_backend(), c);
          const std::string what = std::string(name_of(id)) + " " + std::string(short_name(dt)) + " V=" + std::to_string(V) +
                                   " log_target=" + std::to_string(log_target);
          if (zero_loss) {
            expect_all_zero(o.loss, what + " loss");
            for (const auto& [role, g] : o.grads) expect_all_zero(g, what + " grad " + role);
          } else {  // cross-entropy: the loss is the entropy, but the q-side gradient q - p is exactly 0
            expect_all_zero(o.grads.at(q_role(id)), what + " grad " + q_role(id));
          }
        }
      }
  }
}

TEST(CpuExactZeros, ColumnsPaddedOnBothSidesGetExactlyZeroGradient) {
  // Different rows, but the last 5 columns are -inf in both: p_v = q_v = 0 there, every term
  // with that factor is 0, so the gradient there is exactly 0 (the seed bug's padded-vocabulary
  // case, here on logit rows).
  const std::int64_t B = 2, T = 2, V = 12, padded = 5;
  for (DivergenceId id : logit_rows()) {
    Case c = logit_case(id, B, T, V, DType::f32, padded_logits(B * T, V, padded, 1), padded_logits(B * T, V, padded, 2));
    want_all_grads(c);
    const Outputs o = compute(*make_cpu_backend(), c);
    EXPECT_TRUE(std::isfinite(o.loss.get(0))) << name_of(id);
    for (const auto& [role, g] : o.grads)
      for (std::int64_t r = 0; r < B * T; ++r)
        for (std::int64_t v = V - padded; v < V; ++v)
          EXPECT_EQ(g.get(r * V + v), 0.0) << name_of(id) << " " << role << " row " << r << " column " << v;
  }
}

TEST(CpuExactZeros, TotalVariationFlatInOneSide) {
  // x = (0, 0, -inf, -inf): q = (1/2, 1/2, 0, 0); y = (a, b, c, d) with every p_v < 1/2, so
  // q_v > p_v on all of q's support. Then TV = 1/2 (q0 - p0 + q1 - p1 + p2 + p3)
  // = 1/2 (1 - p0 - p1 + p2 + p3) does not depend on x at all: d TV / dx = 0 exactly (the
  // simplified form T_q - c_v = -Q- + Q- would leave 1 - sum q in float).
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    Case c = logit_case(DivergenceId::total_variation, 1, 2, 4, dt, {0.3, -0.2, 0.1, 0.05, 1.0, 0.0, 0.5, 0.25},
                        {0.0, 0.0, -INFINITY, -INFINITY, 0.7, 0.1, -INFINITY, -INFINITY});
    want_all_grads(c);
    const Outputs o = compute(*make_cpu_backend(), c);
    expect_all_zero(o.grads.at("noisy_logits"), std::string("total_variation ") + std::string(short_name(dt)));
  }
}

TEST(CpuExactZeros, FusedLinearIdenticalHiddenStates) {
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (double beta : {0.0, 1.0}) {
      Case c = random_case(DivergenceId::fused_linear_masked_kl_divergence, dt, 1);
      c.inputs["teacher_hidden"] = c.inputs["student_hidden"];
      c.params.jsd_beta = beta;
      want_all_grads(c);
      const Outputs o = compute(*make_cpu_backend(), c);
      const std::string what = std::string(short_name(dt)) + " jsd_beta " + std::to_string(beta);
      expect_all_zero(o.loss, what + " loss");
      for (const auto& [role, g] : o.grads) expect_all_zero(g, what + " grad " + role);
    }
}

}  // namespace
}  // namespace divcheck::testing

// Reference values against hand-derived closed forms (each derivation is in the comment).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "reference/reference.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck {
namespace {

using testing_ref::kInf;
using testing_ref::logit_case;
using testing_ref::tensor_of;

// |a - b| <= k ulps of b (for values whose closed form evaluates in long double to < 1 ulp).
void expect_close(double got, long double want, double ulps = 2.0) {
  const double w = static_cast<double>(want);
  EXPECT_LE(std::fabs(got - w), ulps * std::fabs(std::nextafter(w, 2 * w + 1) - w) + 1e-300)
      << "got " << got << " want " << w;
}

// p = (1, 0) from p-side logits (0, -inf); q = (1/2, 1/2) from q-side logits (0, 0). One position.
//   KL(p||q)  = 1 log(1 / (1/2)) = ln 2
//   CE        = -sum p lq = ln 2
//   JS        = 1/2 KL(p||m) + 1/2 KL(q||m), m = (3/4, 1/4)
//             = 1/2 ln(4/3) + 1/4 ln(2/3) + 1/4 ln 2 = (3/2) ln 2 - (3/4) ln 3
//   Hellinger = 1/2 ((1 - 1/sqrt2)^2 + (0 - 1/sqrt2)^2) = 1 - sqrt(2)/2
//   TV        = 1/2 (1/2 + 1/2) = 1/2
//   Jefferys  = +inf (q_1 > 0 = p_1)
Case one_hot_vs_uniform(DivergenceId id) { return logit_case(id, 1, 1, 2, {0.0, -kInf}, {0.0, 0.0}); }

TEST(ReferenceClosedForm, OneHotAgainstUniformLosses) {
  const long double ln2 = std::log(2.0L), ln3 = std::log(3.0L);
  expect_close(compute_reference(one_hot_vs_uniform(DivergenceId::masked_kl_divergence)).loss.value[0], ln2);
  expect_close(compute_reference(one_hot_vs_uniform(DivergenceId::masked_cross_entropy)).loss.value[0], ln2);
  expect_close(compute_reference(one_hot_vs_uniform(DivergenceId::jensen_shannon_divergence)).loss.value[0],
               1.5L * ln2 - 0.75L * ln3);
  expect_close(compute_reference(one_hot_vs_uniform(DivergenceId::squared_hellinger_distance)).loss.value[0],
               1.0L - std::sqrt(2.0L) / 2.0L);
  EXPECT_EQ(compute_reference(one_hot_vs_uniform(DivergenceId::total_variation)).loss.value[0], 0.5);
  EXPECT_EQ(compute_reference(one_hot_vs_uniform(DivergenceId::masked_jefferys_divergence)).loss.value[0], kInf);
  EXPECT_EQ(compute_reference(one_hot_vs_uniform(DivergenceId::jefferys_divergence)).loss.value[0], kInf);
}

// Gradients of the one-hot case (w = g = 1):
//   KL: dl/dx = q - p = (-1/2, 1/2); dl/dy = p (d - l) = (1 (ln2 - ln2), 0) = (0, 0) exactly.
//       Column 1 (p_1 = 0, a -inf logit) is a structural zero; column 0 is 0 because d_0 - l
//       cancels (l = 1 * d_0), which the running-error scale does not see as structure: it is
//       judged by its bound (scale > 0), not flagged (docs/tolerances.md, "Exact zeros").
//   TV: sigma = (+1, -1); dl/dy_v = 1/2 p_v (sigma_v - sum sigma p) = (1/2 (1 - 1), 0) = (0, 0);
//       dl/dx_v = -1/2 q_v (sigma_v - sum sigma q) with sum sigma q = 0: (-1/4, 1/4).
TEST(ReferenceClosedForm, OneHotAgainstUniformGradients) {
  Expected kl = compute_reference(one_hot_vs_uniform(DivergenceId::masked_kl_divergence));
  EXPECT_EQ(kl.grads.at("input_logits").value, (std::vector<double>{-0.5, 0.5}));
  EXPECT_EQ(kl.grads.at("target_logits").value, (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(kl.grads.at("target_logits").exact_zero, (std::vector<std::uint8_t>{0, 1}));
  EXPECT_GT(kl.grads.at("target_logits").scale[0], 0.0);
  EXPECT_EQ(kl.grads.at("input_logits").exact_zero, (std::vector<std::uint8_t>{0, 0}));
  Expected tv = compute_reference(one_hot_vs_uniform(DivergenceId::total_variation));
  EXPECT_EQ(tv.grads.at("noisy_logits").value, (std::vector<double>{-0.25, 0.25}));
  EXPECT_EQ(tv.grads.at("clean_logits").value, (std::vector<double>{0.0, 0.0}));
  // Jefferys is +inf at the position, so its gradients are NaN there.
  Expected jf = compute_reference(one_hot_vs_uniform(DivergenceId::jefferys_divergence));
  for (double v : jf.grads.at("noisy_logits").value) EXPECT_TRUE(std::isnan(v));
}

// Two classes, p-side logits (0, a), q-side logits (0, b): p1 = 1/(1 + e^-a), p0 = 1 - p1,
// q likewise with b; ln p0 = -log1p(e^a), ln p1 = -log1p(e^-a).
//   KL = p0 (ln p0 - ln q0) + p1 (ln p1 - ln q1); dKL/da = p0 p1 (d1 - d0) (differentiate
//   sum p (lp - lq): the terms p dlp/da sum to d/da sum p = 0, dp1/da = -dp0/da = p0 p1);
//   dKL/db = q1 - p1 (the q-side form q - p, which for V = 2 is the derivative of -sum p lq).
//   TV = |p1 - q1|, dTV/da = sgn(p1 - q1) p0 p1.
//   H  = 1 - sqrt(p0 q0) - sqrt(p1 q1).
//   JS = 1/2 sum p ln(2p/(p+q)) + 1/2 sum q ln(2q/(p+q)).
TEST(ReferenceClosedForm, TwoClassesGeneralLogits) {
  const long double a = 1.25L, b = -0.5L;
  const long double p1 = 1 / (1 + std::exp(-a)), p0 = 1 - p1, q1 = 1 / (1 + std::exp(-b)), q0 = 1 - q1;
  const long double lp0 = -std::log1p(std::exp(a)), lp1 = -std::log1p(std::exp(-a));
  const long double lq0 = -std::log1p(std::exp(b)), lq1 = -std::log1p(std::exp(-b));
  const long double d0 = lp0 - lq0, d1 = lp1 - lq1;
  const long double kl = p0 * d0 + p1 * d1;
  auto mk = [&](DivergenceId id) {
    return logit_case(id, 1, 1, 2, {0.0, static_cast<double>(a)}, {0.0, static_cast<double>(b)});
  };
  Expected e = compute_reference(mk(DivergenceId::masked_kl_divergence));
  expect_close(e.loss.value[0], kl, 4);
  expect_close(e.grads.at("target_logits").value[1], p0 * p1 * (d1 - d0), 8);
  expect_close(e.grads.at("target_logits").value[0], -p0 * p1 * (d1 - d0), 8);
  expect_close(e.grads.at("input_logits").value[1], q1 - p1, 8);

  Expected tv = compute_reference(mk(DivergenceId::total_variation));
  expect_close(tv.loss.value[0], std::fabs(p1 - q1), 4);
  expect_close(tv.grads.at("clean_logits").value[1], (p1 > q1 ? 1 : -1) * p0 * p1, 8);

  Expected h = compute_reference(mk(DivergenceId::squared_hellinger_distance));
  expect_close(h.loss.value[0], 1 - std::sqrt(p0 * q0) - std::sqrt(p1 * q1), 16);

  const long double m0 = (p0 + q0) / 2, m1 = (p1 + q1) / 2;
  const long double js = 0.5L * (p0 * std::log(p0 / m0) + p1 * std::log(p1 / m1)) +
                         0.5L * (q0 * std::log(q0 / m0) + q1 * std::log(q1 / m1));
  expect_close(compute_reference(mk(DivergenceId::jensen_shannon_divergence)).loss.value[0], js, 16);

  // Jefferys = sum (p - q)(lp - lq); cross-entropy = -sum p lq.
  expect_close(compute_reference(mk(DivergenceId::masked_jefferys_divergence)).loss.value[0],
               (p0 - q0) * d0 + (p1 - q1) * d1, 8);
  expect_close(compute_reference(mk(DivergenceId::masked_cross_entropy)).loss.value[0], -(p0 * lq0 + p1 * lq1), 4);
}

// Exact ties under sgn: q is p with columns 0 and 2 swapped, so p_v = q_v exactly at columns 1
// and 3 and sgn(p_v - q_v) = 0 there (the reference's row sums are order independent, so the
// tie is exact in R too). With p = softmax(1/2, 1, 2, -1): sigma = (-1, 0, +1, 0), and
//   dTV/dy_1 = 1/2 p_1 (sigma_1 - sum sigma p) = -1/2 p_1 (p_2 - p_0)
//   dTV/dy_3 = -1/2 p_3 (p_2 - p_0);  TV = 1/2 (|p_0 - p_2| + |p_2 - p_0|) = p_2 - p_0.
TEST(ReferenceClosedForm, TotalVariationExactTiesFromSwappedColumns) {
  Case c = logit_case(DivergenceId::total_variation, 1, 1, 4, {0.5, 1.0, 2.0, -1.0}, {2.0, 1.0, 0.5, -1.0});
  Expected e = compute_reference(c);
  const long double s = std::exp(0.5L) + std::exp(1.0L) + std::exp(2.0L) + std::exp(-1.0L);
  const long double p0 = std::exp(0.5L) / s, p1 = std::exp(1.0L) / s, p2 = std::exp(2.0L) / s, p3 = std::exp(-1.0L) / s;
  expect_close(e.loss.value[0], p2 - p0, 4);
  expect_close(e.grads.at("clean_logits").value[1], -0.5L * p1 * (p2 - p0), 8);
  expect_close(e.grads.at("clean_logits").value[3], -0.5L * p3 * (p2 - p0), 8);
  // Both tied columns are ambiguous for float32, so they carry a discontinuity allowance.
  EXPECT_GT(e.grads.at("clean_logits").jump[1], 0.0);
}

// The same with long rows, where summing S in a different order would round differently (in
// about half of such rows): q is p with columns 0 and V-1 swapped; at every other column
// sgn = 0, so dTV/dy_v / p_v must be the same constant -1/2 (sigma_0 p_0 + sigma_last p_last) =
// -1/2 |p_0 - p_last| for all of them. Eight rows, each with its own values.
TEST(ReferenceClosedForm, TotalVariationExactTiesInLongRows) {
  const int V = 257, T = 8;
  std::vector<double> p(T * V), q;
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < V; ++v) p[t * V + v] = std::ldexp(static_cast<double>((v * 7919 * (t + 1) + 31 * t) % 1000) - 500.0, -6);
  q = p;
  for (int t = 0; t < T; ++t) std::swap(q[t * V], q[t * V + V - 1]);
  Expected e = compute_reference(logit_case(DivergenceId::total_variation, 1, T, V, p, q));
  const auto& g = e.grads.at("clean_logits").value;
  for (int t = 0; t < T; ++t) {
    long double s = 0;
    for (int v = 0; v < V; ++v) s += std::exp(static_cast<long double>(p[t * V + v]));
    auto prob = [&](int v) { return std::exp(static_cast<long double>(p[t * V + v])) / s; };
    // The batch mean weight of a position is 1/T.
    const long double want = -0.5L * std::fabs(prob(0) - prob(V - 1)) / T;
    for (int v = 1; v < V - 1; ++v)
      ASSERT_NEAR(static_cast<double>(g[t * V + v] / prob(v)), static_cast<double>(want), 1e-12 * std::fabs(static_cast<double>(want)))
          << "row " << t << " column " << v;
  }
}

// Capped cross-entropy: l = M tanh(k ce / M). With the one-hot case ce = ln 2.
TEST(ReferenceClosedForm, CappedCrossEntropy) {
  Case c = one_hot_vs_uniform(DivergenceId::masked_cross_entropy);
  c.params.max_loss = 0.5;
  c.params.scaling_factor = 2.0;
  Expected e = compute_reference(c);
  expect_close(e.loss.value[0], 0.5L * std::tanh(2.0L * std::log(2.0L) / 0.5L), 4);
  // dl/dx = k sech^2(k ce / M) (q - p) = 2 sech^2(4 ln 2) (-1/2, 1/2); sech(4 ln 2) = 2/(16 + 1/16).
  const long double sech = 2.0L / (16.0L + 1.0L / 16.0L);
  expect_close(e.grads.at("input_logits").value[1], 2.0L * sech * sech * 0.5L, 8);
}

// V = 1: every distribution is the point mass, every divergence 0, every gradient exactly 0.
TEST(ReferenceClosedForm, SingleColumnIsZero) {
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::masked_jefferys_divergence,
                          DivergenceId::jefferys_divergence, DivergenceId::jensen_shannon_divergence,
                          DivergenceId::squared_hellinger_distance, DivergenceId::total_variation,
                          DivergenceId::temperature_scaled_masked_kl_divergence,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence}) {
    SCOPED_TRACE(std::string(name_of(id)));
    Expected e = compute_reference(logit_case(id, 2, 2, 1, {3.0, -1.0, 7.5, 0.25}, {-2.0, 4.0, 0.5, 100.0}));
    EXPECT_EQ(e.loss.value[0], 0.0);
    EXPECT_EQ(e.loss.exact_zero[0], 1);
    for (const auto& [role, g] : e.grads)
      for (std::size_t i = 0; i < g.value.size(); ++i) {
        EXPECT_EQ(g.value[i], 0.0) << role;
        EXPECT_EQ(g.exact_zero[i], 1) << role;
      }
  }
  // Cross-entropy of a point mass is -1 * log 1 = 0 as well.
  Expected ce = compute_reference(logit_case(DivergenceId::masked_cross_entropy, 1, 1, 1, {3.0}, {-2.0}));
  EXPECT_EQ(ce.loss.value[0], 0.0);
}

// tvd_prob rows: p = (1/2, 1/4, 1/4), q = (1/4, 1/4, 1/2): l = 1/2 (1/4 + 0 + 1/4) = 1/4;
// p = (1, 0, 0), q = (0, 0, 1): l = 1; the third row is ignored (label -100) and holds NaN.
// sum = 5/4, batchmean = 5/8 (2 valid rows), mean = 5/24; gradient 1/2 sgn(p - q) k g.
TEST(ReferenceClosedForm, TvdProbEveryReduction) {
  Case c;
  c.id = DivergenceId::tvd_prob;
  const double nan = testing_ref::kNaN;
  c.inputs["p"] = tensor_of(DType::f32, {3, 3}, {0.5, 0.25, 0.25, 1, 0, 0, nan, nan, nan});
  c.inputs["q"] = tensor_of(DType::f32, {3, 3}, {0.25, 0.25, 0.5, 0, 0, 1, nan, 0, 1});
  c.inputs["labels"] = tensor_of(DType::i64, {3}, {4, 0, -100});
  c.wants_grad = {"p"};
  struct Want {
    const char* red;
    double loss, k;
  };
  for (Want w : {Want{"sum", 1.25, 1.0}, Want{"batchmean", 0.625, 0.5}, Want{"mean", 1.25 / 6, 1.0 / 6}}) {
    SCOPED_TRACE(w.red);
    c.params.reduction = w.red;
    c.grad_output = Tensor::scalar_f32(2.0f);
    Expected e = compute_reference(c);
    expect_close(e.loss.value[0], w.loss, 1);
    const auto& g = e.grads.at("p");
    const std::vector<double> sg = {1, 0, -1, 1, 0, -1, 0, 0, 0};
    for (std::size_t i = 0; i < 9; ++i) {
      expect_close(g.value[i], 0.5 * sg[i] * w.k * 2.0, 1);
      EXPECT_EQ(g.exact_zero[i], sg[i] == 0 ? 1 : 0) << i;
      EXPECT_EQ(g.jump[i], 0.0);
    }
  }
  c.params.reduction = "none";
  c.grad_output = tensor_of(DType::f32, {3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  Expected e = compute_reference(c);
  EXPECT_EQ(e.loss.shape, (Shape{3, 3}));
  EXPECT_EQ(e.loss.value, (std::vector<double>{0.125, 0, 0.125, 0.5, 0, 0.5, 0, 0, 0}));
  EXPECT_EQ(e.grads.at("p").value, (std::vector<double>{0.5, 0, -0.5, 0.5, 0, -0.5, 0, 0, 0}));
  // No valid row: 0, not an error.
  c.inputs["labels"] = tensor_of(DType::i64, {3}, {-100, -100, -100});
  c.params.reduction = "batchmean";
  c.grad_output = Tensor::scalar_f32(1.0f);
  Expected none_valid = compute_reference(c);
  EXPECT_EQ(none_valid.loss.value[0], 0.0);
  EXPECT_EQ(none_valid.loss.exact_zero[0], 1);
}

// dcor with fewer than 4 valid samples is 0 with zero gradients.
TEST(ReferenceClosedForm, DcorBelowFourSamplesIsZero) {
  Case c;
  c.id = DivergenceId::masked_unbiased_dcor;
  c.inputs["samples_1"] = tensor_of(DType::f32, {1, 4, 1}, {1, 2, 3, 4});
  c.inputs["samples_2"] = tensor_of(DType::f32, {1, 4, 1}, {2, 1, 4, 3});
  c.inputs["attention_mask"] = tensor_of(DType::boolean, {1, 4}, {1, 1, 0, 1});
  c.wants_grad = {"samples_1", "samples_2"};
  c.grad_output = Tensor::scalar_f32(1.0f);
  Expected e = compute_reference(c);
  EXPECT_EQ(e.loss.value[0], 0.0);
  EXPECT_EQ(e.loss.exact_zero[0], 1);
  for (const auto& [role, g] : e.grads)
    for (double v : g.value) EXPECT_EQ(v, 0.0) << role;
}

// dcor against an independent, direct double-precision evaluation of SPEC.md's formulas for a
// small case (a different code path: explicit double-centring loops, no running sums reuse).
TEST(ReferenceClosedForm, DcorMatchesDirectDoubleEvaluation) {
  const std::vector<double> x = {0.5, -1.0, 2.0, 0.25, 1.5, -0.75, 3.0, 0.0, -2.0, 1.0, 0.75, -0.5};  // 6 x 2
  const std::vector<double> y = {1.0, 0.0, 2.5, 0.5, -1.0, 1.5};                                      // 6 x 1
  const int n = 6;
  const double eps = 100.0 * std::ldexp(1.0, -23);
  auto centred = [&](const std::vector<double>& s, int d) {
    std::vector<double> a(n * n, 0.0), r(n, 0.0);
    double t = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        if (i == j) continue;
        double q = 0;
        for (int k = 0; k < d; ++k) q += (s[i * d + k] - s[j * d + k]) * (s[i * d + k] - s[j * d + k]);
        a[i * n + j] = std::sqrt(q + eps);
      }
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) r[i] += a[i * n + j];
      t += r[i];
    }
    std::vector<double> c(n * n, 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j) c[i * n + j] = a[i * n + j] - r[i] / (n - 2) - r[j] / (n - 2) + t / ((n - 1.0) * (n - 2));
    return c;
  };
  const auto A = centred(x, 2), B = centred(y, 1);
  auto v = [&](const std::vector<double>& P, const std::vector<double>& Q) {
    double s = 0;
    for (int i = 0; i < n * n; ++i) s += P[i] * Q[i];
    return s / (n * (n - 3.0));
  };
  const double want = v(A, B) / (std::sqrt(std::max(v(A, A), 0.0) * std::max(v(B, B), 0.0)) + eps);
  ASSERT_GT(want, 0.0);
  ASSERT_LT(want, 1.0);
  Case c;
  c.id = DivergenceId::masked_unbiased_dcor;
  c.inputs["samples_1"] = tensor_of(DType::f32, {2, 3, 2}, x);
  c.inputs["samples_2"] = tensor_of(DType::f32, {2, 3, 1}, y);
  c.inputs["attention_mask"] = tensor_of(DType::i64, {2, 3}, {1, 1, 1, 1, 1, 1});
  Expected e = compute_reference(c);
  EXPECT_NEAR(e.loss.value[0], want, 1e-13 * want);
}

}  // namespace
}  // namespace divcheck

// Small cases whose exact values are derived by hand (in the comments), against the CPU backend.
//
// The V = 2 family: p-side logits y = (0, 0), q-side logits x = (1, 0), one position, g = 1,
// so p = (1/2, 1/2) and q = (s, 1 - s) with s = sigma(1) = e/(1 + e).
// Bound for these: every output passes through at most ~8 float32 operations (exp, log, a
// subtraction, a 2-term sum, products) on quantities of magnitude <= 2, each rounding at most
// 2u (u = 2^-24; glibc's expf/logf are within 1 ulp), so 32u absolute is a bound.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/backend.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

const double kU = std::ldexp(1.0, -24);
const double kTol = 32 * kU;
const double kS = std::exp(1.0) / (1.0 + std::exp(1.0));  // sigma(1)
const double kLog1pE = std::log(1.0 + std::exp(1.0));

Outputs run_v2(DivergenceId id, double q_logit0 = 1.0, double temperature = 1.0) {
  Case c = logit_case(id, 1, 1, 2, DType::f32, {0.0, 0.0}, {q_logit0, 0.0});
  c.params.temperature = temperature;
  want_all_grads(c);
  return compute(*make_cpu_backend(), c);
}

void expect_grads(const Outputs& o, DivergenceId id, std::array<double, 2> gp, std::array<double, 2> gq) {
  const Tensor& p = o.grads.at(p_role(id));
  const Tensor& q = o.grads.at(q_role(id));
  for (int v = 0; v < 2; ++v) {
    EXPECT_NEAR(p.get(v), gp[v], kTol) << name_of(id) << " p-side column " << v;
    EXPECT_NEAR(q.get(v), gq[v], kTol) << name_of(id) << " q-side column " << v;
  }
}

TEST(CpuClosedForm, KlV2) {
  // KL(p||q) = 1/2 log(1/(2s)) + 1/2 log(1/(2(1-s))) = -log 2 - 1/2 log(s(1-s)),
  // log s = 1 - log(1+e), log(1-s) = -log(1+e)  =>  KL = log(1+e) - 1/2 - log 2.
  // dKL/dx = q - p = (s - 1/2, 1/2 - s). dKL/dy = p (d - KL) with d - KL = (-1/2, 1/2)
  // (d = lp - lq = (-log 2 - 1 + log(1+e), -log 2 + log(1+e))), so (-1/4, 1/4).
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::temperature_scaled_masked_kl_divergence}) {
    const Outputs o = run_v2(id);
    EXPECT_NEAR(o.loss.get(0), kLog1pE - 0.5 - std::log(2.0), kTol);
    expect_grads(o, id, {-0.25, 0.25}, {kS - 0.5, 0.5 - kS});
  }
}

TEST(CpuClosedForm, KlLogTargetFalseIsTheSameFunction) {
  Case c = logit_case(DivergenceId::masked_kl_divergence, 1, 1, 2, DType::f32, {0.0, 0.0}, {1.0, 0.0});
  c.params.log_target = false;
  want_all_grads(c);
  const Outputs o = compute(*make_cpu_backend(), c);
  EXPECT_NEAR(o.loss.get(0), kLog1pE - 0.5 - std::log(2.0), kTol);
  expect_grads(o, c.id, {-0.25, 0.25}, {kS - 0.5, 0.5 - kS});
}

TEST(CpuClosedForm, TemperatureDividesLogitsAndGradients) {
  // x = (2, 0) at T = 2 is x/T = (1, 0): the KL values above, gradients times 1/T = 1/2.
  const auto id = DivergenceId::temperature_scaled_masked_kl_divergence;
  const Outputs o = run_v2(id, 2.0, 2.0);
  EXPECT_NEAR(o.loss.get(0), kLog1pE - 0.5 - std::log(2.0), kTol);
  expect_grads(o, id, {-0.125, 0.125}, {(kS - 0.5) / 2, (0.5 - kS) / 2});
}

TEST(CpuClosedForm, JefferysV2) {
  // J = sum (p - q)(lp - lq) = (p1 - q1)(d1 - d2) = (p1 - q1)((y1 - y2) - (x1 - x2)).
  // At y = (0,0), x = (1,0): J = (1/2 - s)(-1) = s - 1/2.
  // dJ/dx1 = s(1-s) + s - 1/2 (product rule with dq1/dx1 = s(1-s)), dJ/dx2 = -dJ/dx1.
  // dJ/dy1 = p1(1-p1)(-1) + (p1 - q1) = 1/4 - s, dJ/dy2 = -dJ/dy1.
  for (DivergenceId id : {DivergenceId::masked_jefferys_divergence, DivergenceId::jefferys_divergence,
                          DivergenceId::temperature_scaled_masked_jefferys_divergence}) {
    const Outputs o = run_v2(id);
    EXPECT_NEAR(o.loss.get(0), kS - 0.5, kTol) << name_of(id);
    const double gx = kS * (1 - kS) + kS - 0.5;
    expect_grads(o, id, {0.25 - kS, kS - 0.25}, {gx, -gx});
  }
}

TEST(CpuClosedForm, CrossEntropyV2) {
  // ce = -1/2 (log s + log(1-s)) = log(1+e) - 1/2. dce/dx = q - p = (s - 1/2, 1/2 - s).
  // dce/dy1 = -(dp1/dy1) lq1 - (dp2/dy1) lq2 = -(1/4) lq1 + (1/4) lq2 = (1/4)(lq2 - lq1) = -1/4.
  const auto id = DivergenceId::masked_cross_entropy;
  const Outputs o = run_v2(id);
  const double ce = kLog1pE - 0.5;
  EXPECT_NEAR(o.loss.get(0), ce, kTol);
  expect_grads(o, id, {-0.25, 0.25}, {kS - 0.5, 0.5 - kS});

  // Capped, M = 1/2, k = 2: ell = M tanh(k ce / M), every gradient times k sech^2(k ce / M).
  Case c = logit_case(id, 1, 1, 2, DType::f32, {0.0, 0.0}, {1.0, 0.0});
  c.params.max_loss = 0.5;
  c.params.scaling_factor = 2.0;
  want_all_grads(c);
  const Outputs oc = compute(*make_cpu_backend(), c);
  const double z = 2.0 * ce / 0.5, slope = 2.0 / (std::cosh(z) * std::cosh(z));
  EXPECT_NEAR(oc.loss.get(0), 0.5 * std::tanh(z), kTol);
  expect_grads(oc, id, {-0.25 * slope, 0.25 * slope}, {(kS - 0.5) * slope, (0.5 - kS) * slope});
}

TEST(CpuClosedForm, TotalVariationV2) {
  // TV = 1/2 (|1/2 - s| + |s - 1/2|) = s - 1/2 (s > 1/2), i.e. sigma(x1 - x2) - 1/2 at y = 0:
  // dTV/dx = (s(1-s), -s(1-s)). As a function of y: TV = |p1 - s| = s - p1 near p1 = 1/2,
  // dTV/dy1 = -p1(1-p1) = -1/4, dTV/dy2 = 1/4.
  const auto id = DivergenceId::total_variation;
  const Outputs o = run_v2(id);
  EXPECT_NEAR(o.loss.get(0), kS - 0.5, kTol);
  expect_grads(o, id, {-0.25, 0.25}, {kS * (1 - kS), -kS * (1 - kS)});
}

TEST(CpuClosedForm, HellingerV2) {
  // H = 1/2 sum (sqrt p - sqrt q)^2 = 1 - sum sqrt(p q) = 1 - (sqrt s + sqrt(1-s)) / sqrt 2.
  // dH/dx1 = -(s(1-s) / (2 sqrt 2)) (1/sqrt s - 1/sqrt(1-s)) (chain rule through s = q1).
  // dH/dy1 = (dH/dp1)(dp1/dy1) = -((sqrt s - sqrt(1-s)) / sqrt 2)(1/4).
  const auto id = DivergenceId::squared_hellinger_distance;
  const Outputs o = run_v2(id);
  const double r2 = std::sqrt(2.0), a = std::sqrt(kS), b = std::sqrt(1 - kS);
  EXPECT_NEAR(o.loss.get(0), 1 - (a + b) / r2, kTol);
  const double gx = -(kS * (1 - kS) / (2 * r2)) * (1 / a - 1 / b);
  const double gy = -((a - b) / r2) * 0.25;
  expect_grads(o, id, {gy, -gy}, {gx, -gx});
}

TEST(CpuClosedForm, JensenShannonV2) {
  // JS = 1/2 sum p log(2p/(p+q)) + q log(2q/(p+q)). With m_v = (p_v + q_v)/2, the partial
  // derivatives are dJS/dp_v = 1/2 log(p_v/m_v), dJS/dq_v = 1/2 log(q_v/m_v) (the other terms
  // cancel because sum p = sum q = 1 in the variations below), and through the 2-logit softmax
  // dJS/dx1 = s(1-s) (dJS/dq1 - dJS/dq2), dJS/dy1 = (1/4)(dJS/dp1 - dJS/dp2).
  const auto id = DivergenceId::jensen_shannon_divergence;
  const Outputs o = run_v2(id);
  const double p[2] = {0.5, 0.5}, q[2] = {kS, 1 - kS};
  double js = 0, dp[2], dq[2];
  for (int v = 0; v < 2; ++v) {
    const double m = (p[v] + q[v]) / 2;
    js += 0.5 * p[v] * std::log(p[v] / m) + 0.5 * q[v] * std::log(q[v] / m);
    dp[v] = 0.5 * std::log(p[v] / m);
    dq[v] = 0.5 * std::log(q[v] / m);
  }
  EXPECT_NEAR(o.loss.get(0), js, kTol);
  const double gx = kS * (1 - kS) * (dq[0] - dq[1]), gy = 0.25 * (dp[0] - dp[1]);
  expect_grads(o, id, {gy, -gy}, {gx, -gx});
}

TEST(CpuClosedForm, VocabularyOfOneIsExactlyZero) {
  // V = 1: p = q = 1 for any logits; every divergence is 0 and so is every gradient.
  for (DivergenceId id : logit_rows()) {
    Case c = logit_case(id, 2, 2, 1, DType::f32, {3.0, -7.0, 0.5, 1e4}, {-2.0, 5.0, 0.25, -1e4});
    c.params.temperature = 0.5;
    want_all_grads(c);
    const Outputs o = compute(*make_cpu_backend(), c);
    EXPECT_EQ(o.loss.get(0), 0.0) << name_of(id);
    for (const auto& [role, g] : o.grads)
      for (std::int64_t i = 0; i < g.numel(); ++i) EXPECT_EQ(g.get(i), 0.0) << name_of(id) << " " << role;
  }
}

TEST(CpuClosedForm, UniformRowsAtDifferentOffsetsAreExactlyZero) {
  // y = (c1, c1, c1, c1), x = (c2, c2, c2, c2): both softmaxes are uniform, and shifting by the
  // row max makes the two rows bitwise identical, so the result is exactly 0.
  for (DivergenceId id : logit_rows()) {
    if (!info(id).props.zero_on_identical) continue;
    Case c = logit_case(id, 1, 2, 4, DType::f32, {5, 5, 5, 5, -3, -3, -3, -3}, {0, 0, 0, 0, 1e4, 1e4, 1e4, 1e4});
    want_all_grads(c);
    const Outputs o = compute(*make_cpu_backend(), c);
    EXPECT_EQ(o.loss.get(0), 0.0) << name_of(id);
    for (const auto& [role, g] : o.grads)
      for (std::int64_t i = 0; i < g.numel(); ++i) EXPECT_EQ(g.get(i), 0.0) << name_of(id) << " " << role;
  }
}

TEST(CpuClosedForm, TvdProbReductions) {
  // p = (1/2, 1/4, 1/4), q = (1/4, 1/4, 1/2) (exact in every dtype); row 1 is ignored.
  // Row value 1/2 (1/4 + 0 + 1/4) = 1/4, n_valid = 1, V = 3.
  // batchmean 1/4, sum 1/4, mean 1/12; gradient (scale/2) sgn(p - q) = scale (1/2, 0, -1/2).
  struct R { const char* red; double loss; double scale; };
  for (R r : {R{"batchmean", 0.25, 1.0}, R{"sum", 0.25, 1.0}, R{"mean", 0.25 / 3, 1.0 / 3}}) {
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      Case c;
      c.id = DivergenceId::tvd_prob;
      c.inputs["p"] = make_tensor(dt, {2, 3}, {0.5, 0.25, 0.25, 0.5, 0.25, 0.25});
      c.inputs["q"] = make_tensor(dt, {2, 3}, {0.25, 0.25, 0.5, 0.25, 0.25, 0.5});
      c.inputs["labels"] = make_tensor(DType::i64, {2}, {3, -100});
      c.params.reduction = r.red;
      want_all_grads(c);
      const Outputs o = compute(*make_cpu_backend(), c);
      EXPECT_EQ(o.loss.get(0), static_cast<float>(r.loss)) << r.red;  // one rounding of the exact value
      const Tensor& g = o.grads.at("p");
      const double expect[6] = {0.5 * r.scale, 0, -0.5 * r.scale, 0, 0, 0};
      for (int i = 0; i < 6; ++i) EXPECT_EQ(g.get(i), round_to_dtype(expect[i], dt)) << r.red << " element " << i;
    }
  }
  // "none": the elements |p - q|/2, the ignored row 0; g = 1 everywhere gives (1/2) sgn(p - q).
  Case c;
  c.id = DivergenceId::tvd_prob;
  c.inputs["p"] = make_tensor(DType::f32, {2, 3}, {0.5, 0.25, 0.25, 0.5, 0.25, 0.25});
  c.inputs["q"] = make_tensor(DType::f32, {2, 3}, {0.25, 0.25, 0.5, 0.25, 0.25, 0.5});
  c.inputs["labels"] = make_tensor(DType::i64, {2}, {3, -100});
  c.params.reduction = "none";
  want_all_grads(c);
  const Outputs o = compute(*make_cpu_backend(), c);
  const double loss[6] = {0.125, 0, 0.125, 0, 0, 0}, grad[6] = {0.5, 0, -0.5, 0, 0, 0};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(o.loss.get(i), loss[i]) << i;
    EXPECT_EQ(o.grads.at("p").get(i), grad[i]) << i;
  }
}

Case dcor_1d_case(const std::vector<double>& x, const std::vector<double>& y) {
  Case c;
  c.id = DivergenceId::masked_unbiased_dcor;
  const auto n = static_cast<std::int64_t>(x.size());
  c.inputs["samples_1"] = make_tensor(DType::f32, {1, n, 1}, x);
  c.inputs["samples_2"] = make_tensor(DType::f32, {1, n, 1}, y);
  c.inputs["attention_mask"] = ones_mask({1, n});
  c.params.safety_factor = 0.0;
  want_all_grads(c);
  return c;
}

TEST(CpuClosedForm, DcorFourPointsOnALine) {
  // X = (0, 1, 2, 3), eps = 0: a_ij = |i - j|, row sums (6, 4, 4, 6), total 20, N - 2 = 2,
  // (N-1)(N-2) = 6. A~_ij = a_ij - r_i/2 - r_j/2 + 10/3 gives A~_01 = A~_23 = -2/3 and 1/3 for
  // the other four pairs; V(X,X) = 2 (4/9 + 4/9 + 4 * 1/9) / (4 * 1) = 2/3.
  // Y = X: V(X,Y) = V(X,X) = V(Y,Y), ratio V / sqrt(V V) = 1 exactly (sqrt(fl(V^2)) = V).
  const Outputs same = compute(*make_cpu_backend(), dcor_1d_case({0, 1, 2, 3}, {0, 1, 2, 3}));
  EXPECT_EQ(same.loss.get(0), 1.0);
  // Y = (0, 2, 1, 3): rows (6, 4, 4, 6), B~_01 = 1/3, B~_02 = -2/3, B~_03 = 1/3, B~_12 = 1/3,
  // B~_13 = -2/3, B~_23 = 1/3; V(X,Y) = 2 (-2/9 - 2/9 + 1/9 + 1/9 - 2/9 - 2/9) / 4 = -1/3,
  // V(Y,Y) = 2/3: ratio -1/2, clamped to 0, where the gradient is exactly 0.
  const Outputs anti = compute(*make_cpu_backend(), dcor_1d_case({0, 1, 2, 3}, {0, 2, 1, 3}));
  EXPECT_EQ(anti.loss.get(0), 0.0);
  for (const auto& [role, g] : anti.grads)
    for (std::int64_t i = 0; i < g.numel(); ++i) EXPECT_EQ(g.get(i), 0.0) << role << " " << i;
}

}  // namespace
}  // namespace divcheck::testing

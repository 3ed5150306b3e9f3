// The exact-zero rule (reference/reference.hpp, docs/tolerances.md "Exact zeros"): an element is
// flagged exact_zero only when its value is 0 AND its running-error scale is 0 (a structural
// zero). A value that is 0 only because R's arithmetic cancelled, or only in exact arithmetic,
// is judged by its bound. The cases here are the ones that broke the first version of the rule
// (a float128 value of 0 was taken as structural) and the structural zeros the rule must keep.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "reference/reference.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck {
namespace {

using testing_ref::filled;
using testing_ref::kInf;
using testing_ref::kNaN;
using testing_ref::logit_case;
using testing_ref::random_case;
using testing_ref::RandomOptions;
using testing_ref::set_reduction;
using testing_ref::tensor_of;

// |got - want| <= rel |want| (want computed in long double from a closed form).
void expect_rel(double got, long double want, double rel, const std::string& what) {
  const double w = static_cast<double>(want);
  EXPECT_LE(std::fabs(got - w), rel * std::fabs(w)) << what << ": got " << got << " want " << w;
}

// Softmax of a row in long double: each log-probability as t_v - log1p(sum of the others'
// exp(t_u)), t = y - max, without forming 1 + tiny sums that lose the small terms.
std::vector<long double> softmax_ld(const std::vector<long double>& y) {
  long double m = -INFINITY;
  for (long double v : y) m = std::max(m, v);
  long double rest = 0;  // sum exp(t_u) over u != argmax
  bool seen_max = false;
  for (long double v : y) {
    if (v == m && !seen_max) {
      seen_max = true;
      continue;
    }
    rest += std::exp(v - m);
  }
  std::vector<long double> p;
  for (long double v : y) p.push_back(std::exp(v - m) / (1 + rest));
  return p;
}

// TV on a near-one-hot position: p = softmax(80, 0), q = softmax(30, 0). sgn = (+1, -1) and
//   dl/dy_0 = p_0 (1 - (p_0 - p_1)) / 2 = p_0 p_1,   dl/dy_1 = -p_0 p_1,
//   dl/dx_0 = -q_0 (1 - (q_0 - q_1)) / 2 = -q_0 q_1,  dl/dx_1 = q_0 q_1     (1 - p_0 = p_1).
// p_0 p_1 ~ e^-80 ~ 1.8e-35 is below float128's resolution of 1 - (p_0 - p_1): the old
// reference returned 0 there and flagged it exact (the gate case total_variation near_one_hot
// 150), while the true value is 1.8e-35.
TEST(ReferenceExactZeroRule, TotalVariationNearOneHotIsNotAnAccidentalZero) {
  Case c = logit_case(DivergenceId::total_variation, 1, 1, 2, {80.0, 0.0}, {30.0, 0.0});
  const Expected e = compute_reference(c);
  const auto p = softmax_ld({80.0L, 0.0L}), q = softmax_ld({30.0L, 0.0L});
  const auto& gy = e.grads.at("clean_logits");
  const auto& gx = e.grads.at("noisy_logits");
  expect_rel(gy.value[0], p[0] * p[1], 1e-15, "dl/dy_0");
  expect_rel(gy.value[1], -p[0] * p[1], 1e-15, "dl/dy_1");
  expect_rel(gx.value[0], -q[0] * q[1], 1e-15, "dl/dx_0");
  expect_rel(gx.value[1], q[0] * q[1], 1e-15, "dl/dx_1");
  for (int v = 0; v < 2; ++v) {
    EXPECT_EQ(gy.exact_zero[v], 0);
    EXPECT_EQ(gx.exact_zero[v], 0);
    EXPECT_GT(gy.scale[v], 0.0);
  }
}

// The example of the issue: draw_case(total_variation, "random_logits", seed 1006, size 80),
// position (1, 3), element 39 of the noisy_logits gradient. Its rows (as float32):
//   noisy = (125, 75, -12.3019695, 210.297913), clean = (270.249451, 72.3920364, 194.370178,
//   -280.389679); sgn(p - q) = (+1, -1, +1, -1). With 1 - q_3 = q_0 + q_1 + q_2:
//   dl/dx_3 = -q_3 (-1 - (q_0 - q_1 + q_2 - q_3)) / 2 = q_3 (q_0 + q_2) ~ e^-85.3 ~ 9e-38,
// which float128 lost to 1 - sum (the old reference said -0, flagged exact; the CPU backend
// returned the right value and was reported wrong).
TEST(ReferenceExactZeroRule, TotalVariationIssueExample) {
  const std::vector<double> noisy = {125.0, 75.0, -12.3019695, 210.297913};
  const std::vector<double> clean = {270.249451, 72.3920364, 194.370178, -280.389679};
  Case c = logit_case(DivergenceId::total_variation, 1, 1, 4, clean, noisy);
  const Expected e = compute_reference(c);
  // The float32 inputs exactly (the printed 9 digits identify each float uniquely).
  std::vector<long double> x, y;
  for (int v = 0; v < 4; ++v) {
    x.push_back(c.inputs.at("noisy_logits").get(v));
    y.push_back(c.inputs.at("clean_logits").get(v));
  }
  const auto q = softmax_ld(x);
  const auto& gx = e.grads.at("noisy_logits");
  expect_rel(gx.value[3], q[3] * (q[0] + q[2]), 1e-15, "dl/dx_3");
  EXPECT_EQ(gx.exact_zero[3], 0);
  EXPECT_GT(gx.scale[3], 0.0);
}

// JS with q's mass on two columns where p is ~0 (the gate case jensen_shannon_divergence
// padded_vocab 120): e^q_v = ln 2 - log1p(p_v / q_v) is ln 2 up to ~1e-40 on both, so
// q_v (e^q_v - J_q) cancels to the last bit of ln 2 in the form of docs/semantics.md. With
// r_v = log1p(p_v / q_v) and sum q = 1:  dl/dx_v = q_v sum_u q_u (r_u - r_v) / 2.
// Logits: x = (0, 2, -100), y = (-100, -95, 0): q = (0.119, 0.881, ~e^-102), p ~ (e^-100,
// e^-95, 1).
TEST(ReferenceExactZeroRule, JensenShannonDisjointMassIsAccurate) {
  const std::vector<double> y = {-100.0, -95.0, 0.0}, x = {0.0, 2.0, -100.0};
  Case c = logit_case(DivergenceId::jensen_shannon_divergence, 1, 1, 3, y, x);
  const Expected e = compute_reference(c);
  const auto p = softmax_ld({-100.0L, -95.0L, 0.0L}), q = softmax_ld({0.0L, 2.0L, -100.0L});
  const auto& gx = e.grads.at("noisy_logits");
  for (int v = 0; v < 2; ++v) {
    long double want = 0;
    const long double rv = std::log1p(p[v] / q[v]);
    for (int u = 0; u < 3; ++u) want += q[u] * (std::log1p(p[u] / q[u]) - rv);
    want *= q[v] / 2;
    expect_rel(gx.value[v], want, 1e-12, "dl/dx_" + std::to_string(v));
    EXPECT_EQ(gx.exact_zero[v], 0);
  }
}

// Hellinger, the same geometry further apart: h^q_v / q_v = (1 - sqrt(p_v / q_v)) / 2 is 1/2
// up to ~1e-42, and dl/dx_v = h^q_v - q_v sum h^q = q_v sum_u q_u (sqrt(p_u/q_u) - sqrt(p_v/q_v)) / 2.
// Logits: x = (0, 2, -200), y = (-200, -190, 0).
TEST(ReferenceExactZeroRule, HellingerDisjointMassIsAccurate) {
  const std::vector<double> y = {-200.0, -190.0, 0.0}, x = {0.0, 2.0, -200.0};
  Case c = logit_case(DivergenceId::squared_hellinger_distance, 1, 1, 3, y, x);
  const Expected e = compute_reference(c);
  const auto p = softmax_ld({-200.0L, -190.0L, 0.0L}), q = softmax_ld({0.0L, 2.0L, -200.0L});
  const auto& gx = e.grads.at("noisy_logits");
  for (int v = 0; v < 2; ++v) {
    long double want = 0;
    const long double sv = std::sqrt(p[v] / q[v]);
    for (int u = 0; u < 3; ++u) want += q[u] * (std::sqrt(p[u] / q[u]) - sv);
    want *= q[v] / 2;
    expect_rel(gx.value[v], want, 1e-12, "dl/dx_" + std::to_string(v));
    EXPECT_EQ(gx.exact_zero[v], 0);
  }
}

// KL on the p side at a dominant column: y = (0, -90), x = (0, 3). For two classes,
// dl/dy_0 = p_0 (d_0 - l) = p_0 p_1 (d_0 - d_1) ~ e^-90 * 93, far below float128's resolution
// of d_0 - l (l ~ d_0 ~ 0.05); the dominant-column form of reference/centering.hpp keeps it.
TEST(ReferenceExactZeroRule, KlDominantColumnIsAccurate) {
  Case c = logit_case(DivergenceId::masked_kl_divergence, 1, 1, 2, {0.0, -90.0}, {0.0, 3.0});
  const Expected e = compute_reference(c);
  const auto p = softmax_ld({0.0L, -90.0L}), q = softmax_ld({0.0L, 3.0L});
  const long double d0 = std::log(p[0]) - std::log(q[0]);
  const long double d1 = (-90.0L - std::log1p(std::exp(-90.0L))) - std::log(q[1]);
  const auto& gy = e.grads.at("target_logits");
  expect_rel(gy.value[0], p[0] * p[1] * (d0 - d1), 1e-12, "dl/dy_0");
  expect_rel(gy.value[1], -p[0] * p[1] * (d0 - d1), 1e-12, "dl/dy_1");
  EXPECT_EQ(gy.exact_zero[0], 0);
}

// The structural zeros: scale 0 and flagged.
TEST(ReferenceExactZeroRule, StructuralZerosAreFlaggedWithScaleZero) {
  // Identical rows at one position, different at the other: only the identical one is flagged.
  const std::vector<double> y = {1.0, -2.0, 0.5, 3.0, 0.25, -1.0};
  const std::vector<double> x = {1.0, -2.0, 0.5, 3.0, 0.5, -1.0};
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::jensen_shannon_divergence,
                          DivergenceId::total_variation, DivergenceId::squared_hellinger_distance,
                          DivergenceId::jefferys_divergence, DivergenceId::temperature_scaled_masked_jefferys_divergence}) {
    SCOPED_TRACE(std::string(name_of(id)));
    Case c = logit_case(id, 1, 2, 3, y, x);
    const Expected e = compute_reference(c);
    for (const auto& [role, g] : e.grads)
      for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(g.exact_zero[i], i < 3 ? 1 : 0) << role << "[" << i << "]";
        EXPECT_EQ(g.scale[i] == 0.0, i < 3) << role << "[" << i << "]";
      }
  }
  // An upstream gradient of 0: every gradient element is a structural zero.
  Case g0 = random_case(DivergenceId::total_variation, 3);
  set_reduction(g0, "mean", 0.0);
  for (const auto& [role, g] : compute_reference(g0).grads)
    for (std::size_t i = 0; i < g.value.size(); ++i) EXPECT_EQ(g.exact_zero[i], 1) << role << "[" << i << "]";
  // tvd_prob: p == q elements of a none reduction (loss and gradient), all-tied rows (loss).
  Case t;
  t.id = DivergenceId::tvd_prob;
  t.inputs["p"] = tensor_of(DType::f32, {2, 2}, {0.25, 0.75, 0.5, 0.5});
  t.inputs["q"] = tensor_of(DType::f32, {2, 2}, {0.25, 0.75, 0.75, 0.25});
  t.wants_grad = {"p"};
  t.params.reduction = "none";
  t.grad_output = filled(DType::f32, {2, 2}, 1.0);
  const Expected te = compute_reference(t);
  EXPECT_EQ(te.loss.exact_zero, (std::vector<std::uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(te.grads.at("p").exact_zero, (std::vector<std::uint8_t>{1, 1, 0, 0}));
  t.inputs["q"] = t.inputs["p"];
  t.params.reduction = "batchmean";
  t.grad_output = Tensor::scalar_f32(1.0f);
  EXPECT_EQ(compute_reference(t).loss.exact_zero[0], 1);
}

// Bitwise identical rows that are NaN rows stay NaN (the NaN rule wins over the identity).
TEST(ReferenceExactZeroRule, IdenticalNanRowsStayNan) {
  for (double bad : {kNaN, kInf}) {
    Case c = logit_case(DivergenceId::total_variation, 1, 1, 3, {1.0, bad, 0.0}, {1.0, bad, 0.0});
    const Expected e = compute_reference(c);
    EXPECT_TRUE(std::isnan(e.loss.value[0]));
    for (const auto& [role, g] : e.grads)
      for (int v = 0; v < 3; ++v) {
        EXPECT_TRUE(std::isnan(g.value[v])) << role;
        EXPECT_EQ(g.exact_zero[v], 0) << role;
      }
  }
  Case all_inf = logit_case(DivergenceId::masked_kl_divergence, 1, 1, 2, {-kInf, -kInf}, {-kInf, -kInf});
  EXPECT_TRUE(std::isnan(compute_reference(all_inf).loss.value[0]));
}

// Fused-linear: a position whose student and teacher hidden rows are bitwise identical is
// structurally zero (its hidden-state gradient flagged, scale 0); the others are not.
TEST(ReferenceExactZeroRule, FusedLinearIdenticalHiddenRows) {
  RandomOptions o;
  o.B = 1;
  o.T = 2;
  o.masked_positions = false;
  Case c = random_case(DivergenceId::fused_linear_masked_kl_divergence, 8, o);
  Tensor& ht = c.inputs.at("teacher_hidden");
  const Tensor& hs = c.inputs.at("student_hidden");
  for (std::int64_t k = 0; k < o.H; ++k) ht.set(k, hs.get(k));  // position 0 identical
  const Expected e = compute_reference(c);
  const auto& gh = e.grads.at("student_hidden");
  for (std::int64_t k = 0; k < o.H; ++k) {
    EXPECT_EQ(gh.exact_zero[k], 1) << k;
    EXPECT_EQ(gh.scale[k], 0.0) << k;
    EXPECT_EQ(gh.exact_zero[o.H + k], 0) << k;
    EXPECT_NE(gh.value[o.H + k], 0.0) << k;
  }
  // Position 1 identical too: the loss and the weight gradient are structural zeros.
  for (std::int64_t k = 0; k < o.H; ++k) ht.set(o.H + k, hs.get(o.H + k));
  const Expected all = compute_reference(c);
  EXPECT_EQ(all.loss.exact_zero[0], 1);
  for (std::uint8_t z : all.grads.at("lm_head_weight").exact_zero) EXPECT_EQ(z, 1);
}

// The invariant itself, over random cases of every row: flagged means value 0, scale 0 and no
// allowance.
TEST(ReferenceExactZeroRule, FlagMeansValueAndScaleZero) {
  for (int id_i = 0; id_i < static_cast<int>(kNumDivergences); ++id_i) {
    const auto id = static_cast<DivergenceId>(id_i);
    SCOPED_TRACE(std::string(name_of(id)));
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      RandomOptions o;
      o.logit_scale = seed == 3 ? 60.0 : 3.0;
      const Expected e = compute_reference(random_case(id, seed, o));
      auto check = [](const ExpectedTensor& t, const std::string& what) {
        for (std::size_t i = 0; i < t.value.size(); ++i) {
          if (!t.exact_zero[i]) continue;
          EXPECT_EQ(t.value[i], 0.0) << what << "[" << i << "]";
          EXPECT_EQ(t.scale[i], 0.0) << what << "[" << i << "]";
          EXPECT_EQ(t.jump[i], 0.0) << what << "[" << i << "]";
        }
      };
      check(e.loss, "loss");
      for (const auto& [role, g] : e.grads) check(g, role);
    }
  }
}

}  // namespace
}  // namespace divcheck

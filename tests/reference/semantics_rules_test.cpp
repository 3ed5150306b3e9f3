// The reference follows docs/semantics.md's rules exactly: identical rows give exact zeros,
// zero-probability columns, infinite divergences, the NaN row rule, masked positions inert,
// fully masked sequences, mean vs none, token_mean, validation errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/errors.hpp"
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

constexpr DivergenceId kZeroOnIdentical[] = {
    DivergenceId::masked_kl_divergence,
    DivergenceId::masked_jefferys_divergence,
    DivergenceId::jefferys_divergence,
    DivergenceId::jensen_shannon_divergence,
    DivergenceId::squared_hellinger_distance,
    DivergenceId::total_variation,
    DivergenceId::temperature_scaled_masked_kl_divergence,
    DivergenceId::temperature_scaled_masked_jefferys_divergence,
};

void expect_all_exact_zero(const ExpectedTensor& t, const std::string& what) {
  for (std::size_t i = 0; i < t.value.size(); ++i) {
    ASSERT_EQ(t.value[i], 0.0) << what << "[" << i << "]";
    ASSERT_EQ(t.exact_zero[i], 1) << what << "[" << i << "]";
  }
}

// Identical rows give exact zeros (structural: scale 0, flagged). Rows that differ by a constant
// shift (same softmax) give the value 0 as well, but only in exact arithmetic: an implementation
// may form lp = y - (m + log S), whose rounding differs between the two rows, so those zeros
// are judged by their bound (scale > 0) and not flagged.
TEST(ReferenceSemantics, IdenticalRowsGiveExactZerosShiftedRowsGiveZeroValues) {
  const std::vector<double> x = {1.5, -2.25, 0.125, 7.0, -kInf, 3.0, 0.0, -1.0};
  std::vector<double> shifted;
  for (double v : x) shifted.push_back(v + 16.0);  // exact in float32 for these values
  for (DivergenceId id : kZeroOnIdentical) {
    SCOPED_TRACE(std::string(name_of(id)));
    for (const std::vector<double>* p_side : {&x, static_cast<const std::vector<double>*>(&shifted)}) {
      Case c = logit_case(id, 1, 2, 4, *p_side, x);
      if (id == DivergenceId::temperature_scaled_masked_kl_divergence) c.params.temperature = 0.3;
      Expected e = compute_reference(c);
      if (p_side == &x) {
        expect_all_exact_zero(e.loss, "loss");
        for (const auto& [role, g] : e.grads) {
          expect_all_exact_zero(g, role);
          for (double sc : g.scale) EXPECT_EQ(sc, 0.0) << role;
        }
        continue;
      }
      EXPECT_EQ(e.loss.value[0], 0.0);
      EXPECT_EQ(e.loss.exact_zero[0], 0);
      for (const auto& [role, g] : e.grads)
        for (std::size_t i = 0; i < g.value.size(); ++i) {
          EXPECT_EQ(g.value[i], 0.0) << role << "[" << i << "]";
          // Element 4 (position 1, column 0) is -inf on both sides: structural there.
          EXPECT_EQ(g.exact_zero[i], i == 4 ? 1 : 0) << role << "[" << i << "]";
        }
    }
  }
  // Cross-entropy of identical rows is the entropy (not 0), but dl/dx = q - p is exactly 0.
  Expected ce = compute_reference(logit_case(DivergenceId::masked_cross_entropy, 1, 2, 4, x, x));
  EXPECT_GT(ce.loss.value[0], 0.0);
  expect_all_exact_zero(ce.grads.at("input_logits"), "ce input grad");
}

// A column that is -inf on both sides has probability 0 on both: every gradient there is
// exactly 0 and the loss is finite.
TEST(ReferenceSemantics, NegativeInfinityColumnsAreZeroProbability) {
  for (DivergenceId id : kZeroOnIdentical) {
    SCOPED_TRACE(std::string(name_of(id)));
    Expected e = compute_reference(logit_case(id, 1, 1, 4, {0.5, -kInf, 2.0, -1.0}, {1.0, -kInf, -0.5, 0.0}));
    EXPECT_TRUE(std::isfinite(e.loss.value[0]));
    EXPECT_GT(e.loss.value[0], 0.0);
    for (const auto& [role, g] : e.grads) {
      EXPECT_EQ(g.value[1], 0.0) << role;
      EXPECT_EQ(g.exact_zero[1], 1) << role;
      EXPECT_EQ(g.exact_zero[0], 0) << role;
    }
  }
}

// p > 0 = q at a valid position: KL, Jefferys and uncapped cross-entropy are +inf there, the
// reduced loss is +inf (never NaN) and that position's gradients are NaN; the other position's
// gradients stay finite. Capped cross-entropy gives max_loss with exactly zero gradients.
TEST(ReferenceSemantics, InfiniteDivergence) {
  const std::vector<double> p = {0.0, 0.0, 1.0, 2.0};
  const std::vector<double> q = {0.0, -kInf, 0.5, 1.0};  // position 0: p_1 > 0 = q_1
  for (DivergenceId id : {DivergenceId::masked_kl_divergence, DivergenceId::masked_jefferys_divergence,
                          DivergenceId::masked_cross_entropy, DivergenceId::jefferys_divergence,
                          DivergenceId::temperature_scaled_masked_kl_divergence}) {
    SCOPED_TRACE(std::string(name_of(id)));
    Expected e = compute_reference(logit_case(id, 1, 2, 2, p, q));
    EXPECT_EQ(e.loss.value[0], kInf);
    for (const auto& [role, g] : e.grads) {
      EXPECT_TRUE(std::isnan(g.value[0]) && std::isnan(g.value[1])) << role;
      EXPECT_TRUE(std::isfinite(g.value[2]) && std::isfinite(g.value[3])) << role;
    }
  }
  // JS, Hellinger, TV stay finite.
  for (DivergenceId id : {DivergenceId::jensen_shannon_divergence, DivergenceId::squared_hellinger_distance,
                          DivergenceId::total_variation}) {
    Expected e = compute_reference(logit_case(id, 1, 2, 2, p, q));
    EXPECT_TRUE(std::isfinite(e.loss.value[0])) << name_of(id);
  }
  Case capped = logit_case(DivergenceId::masked_cross_entropy, 1, 2, 2, p, q);
  capped.params.max_loss = 3.0;
  Expected e = compute_reference(capped);
  const auto& gx = e.grads.at("input_logits");
  EXPECT_EQ(gx.value[0], 0.0);
  EXPECT_EQ(gx.exact_zero[0], 1);
  EXPECT_NE(gx.value[2], 0.0);
  // loss = (max_loss + l_1) / 2 with l_1 < max_loss.
  EXPECT_GT(e.loss.value[0], 1.5);
  EXPECT_LT(e.loss.value[0], 3.0);
}

// NaN row rule: a NaN or +inf logit, or a row with no finite logit, at a valid position makes
// the loss NaN and every gradient of that position NaN; other positions are unaffected.
TEST(ReferenceSemantics, NanRowRule) {
  const std::vector<double> q = {0.5, 1.0, -1.0, 2.0, 0.0, 0.25};
  for (double bad : {kNaN, kInf}) {
    for (DivergenceId id : kZeroOnIdentical) {
      SCOPED_TRACE(std::string(name_of(id)));
      std::vector<double> p = {1.0, 0.0, 2.0, -1.0, 0.5, 0.5};
      p[1] = bad;  // position 0
      Expected e = compute_reference(logit_case(id, 1, 2, 3, p, q));
      EXPECT_TRUE(std::isnan(e.loss.value[0]));
      for (const auto& [role, g] : e.grads) {
        for (int v = 0; v < 3; ++v) EXPECT_TRUE(std::isnan(g.value[v])) << role;
        for (int v = 3; v < 6; ++v) EXPECT_TRUE(std::isfinite(g.value[v])) << role;
        for (int v = 0; v < 3; ++v) EXPECT_EQ(g.exact_zero[v], 0) << role;
      }
    }
  }
  // A row with no finite logit.
  Expected e = compute_reference(
      logit_case(DivergenceId::masked_kl_divergence, 1, 1, 2, {-kInf, -kInf}, {0.0, 1.0}));
  EXPECT_TRUE(std::isnan(e.loss.value[0]));
}

// Masked positions are inert: NaN garbage there changes nothing (bitwise), their gradients are
// exactly +0 and flagged exact.
TEST(ReferenceSemantics, MaskedPositionsAreInert) {
  for (int id_i = 0; id_i < static_cast<int>(kNumDivergences); ++id_i) {
    const auto id = static_cast<DivergenceId>(id_i);
    if (id == DivergenceId::tvd_prob) continue;  // labels: checked in the closed-form test
    SCOPED_TRACE(std::string(name_of(id)));
    RandomOptions o;
    o.T = 4;
    Case with_nan = random_case(id, 21, o);
    o.garbage = false;
    Case clean = random_case(id, 21, o);
    // Same values at valid positions, but `clean` holds finite numbers where `with_nan` holds NaN.
    Expected a = compute_reference(with_nan), b = compute_reference(clean);
    EXPECT_EQ(a.loss.value, b.loss.value);
    EXPECT_EQ(a.loss.scale, b.loss.scale);
    for (const auto& [role, g] : a.grads) {
      const auto& h = b.grads.at(role);
      EXPECT_EQ(g.value, h.value) << role;
      EXPECT_EQ(g.scale, h.scale) << role;
      EXPECT_EQ(g.jump, h.jump) << role;
      EXPECT_EQ(g.exact_zero, h.exact_zero) << role;
      if (id == DivergenceId::fused_linear_masked_kl_divergence && role == "lm_head_weight") continue;
      const Tensor& in = *with_nan.input(role);
      int masked = 0;
      for (std::int64_t i = 0; i < in.numel(); ++i) {
        if (!std::isnan(in.get(i))) continue;
        ++masked;
        EXPECT_EQ(g.value[i], 0.0) << role << "[" << i << "]";
        EXPECT_FALSE(std::signbit(g.value[i])) << role << "[" << i << "] must be +0";
        EXPECT_EQ(g.exact_zero[i], 1) << role << "[" << i << "]";
      }
      EXPECT_GT(masked, 0) << role;
    }
  }
}

// A sequence with no valid position contributes 0 to the mean and still counts in B; an
// all-masked batch gives exactly 0 everywhere.
TEST(ReferenceSemantics, FullyMaskedSequences) {
  const std::vector<double> p = {1.0, 0.0, -1.0, 0.5, 2.0, 0.0, 1.0, 1.0, -3.0, 0.25, 0.5, 0.75};
  const std::vector<double> q = {0.0, 1.0, 0.5, -0.5, 1.0, 0.0, 2.0, 0.5, 0.0, -1.0, 0.0, 1.0};
  Case both = logit_case(DivergenceId::jensen_shannon_divergence, 2, 2, 3, p, q);
  both.inputs["attention_mask"] = tensor_of(DType::i64, {2, 2}, {1, 1, 0, 0});
  Case first = logit_case(DivergenceId::jensen_shannon_divergence, 1, 2, 3, {p.begin(), p.begin() + 6},
                          {q.begin(), q.begin() + 6});
  Expected eb = compute_reference(both), ef = compute_reference(first);
  // (s_0 + 0) / 2, s_0 from the one-sequence case: halving is exact.
  EXPECT_EQ(eb.loss.value[0], ef.loss.value[0] / 2);
  for (int i = 6; i < 12; ++i) EXPECT_EQ(eb.grads.at("clean_logits").exact_zero[i], 1);
  both.inputs["attention_mask"] = tensor_of(DType::i64, {2, 2}, {0, 0, 0, 0});
  Expected none = compute_reference(both);
  expect_all_exact_zero(none.loss, "loss");
  for (const auto& [role, g] : none.grads) expect_all_exact_zero(g, role);
}

// reduction="none" returns the per-sequence vector whose mean is reduction="mean"; with
// g_b = 1/B its gradients equal those of "mean" with g = 1.
TEST(ReferenceSemantics, MeanIsTheAverageOfNone) {
  for (DivergenceId id : {DivergenceId::jefferys_divergence, DivergenceId::jensen_shannon_divergence,
                          DivergenceId::squared_hellinger_distance, DivergenceId::total_variation}) {
    SCOPED_TRACE(std::string(name_of(id)));
    Case c = random_case(id, 31);  // B = 2
    c.grad_output = Tensor::scalar_f32(1.0f);
    Expected mean = compute_reference(c);
    set_reduction(c, "none");
    c.grad_output = filled(DType::f32, {2}, 0.5);
    Expected none = compute_reference(c);
    ASSERT_EQ(none.loss.shape, (Shape{2}));
    EXPECT_NEAR(mean.loss.value[0], (none.loss.value[0] + none.loss.value[1]) / 2, 1e-15 * mean.loss.value[0]);
    for (const auto& [role, g] : mean.grads) {
      const auto& h = none.grads.at(role);
      for (std::size_t i = 0; i < g.value.size(); ++i) EXPECT_NEAR(g.value[i], h.value[i], 1e-15 * std::fabs(g.value[i]));
    }
  }
}

// token_mean: sum over valid positions / number of valid positions, each position computed alone.
TEST(ReferenceSemantics, TokenMean) {
  const std::vector<double> t = {1.0, 0.0, -1.0, 0.5, 2.0, 0.0, 1.0, 1.0, -3.0};
  const std::vector<double> s = {0.0, 1.0, 0.5, -0.5, 1.0, 0.0, 2.0, 0.5, 0.0};
  Case c = logit_case(DivergenceId::temperature_scaled_masked_kl_divergence, 1, 3, 3, t, s);
  c.params.temperature = 2.0;
  c.inputs["position_mask"] = tensor_of(DType::boolean, {1, 3}, {1, 0, 1});
  Expected e = compute_reference(c);
  double sum = 0;
  for (int pos : {0, 2}) {
    Case one = logit_case(DivergenceId::temperature_scaled_masked_kl_divergence, 1, 1, 3,
                          {t.begin() + 3 * pos, t.begin() + 3 * pos + 3}, {s.begin() + 3 * pos, s.begin() + 3 * pos + 3});
    one.params.temperature = 2.0;
    sum += compute_reference(one).loss.value[0];
  }
  EXPECT_NEAR(e.loss.value[0], sum / 2, 1e-15 * sum);
  // Nothing valid: 0.
  c.inputs["position_mask"] = tensor_of(DType::boolean, {1, 3}, {0, 0, 0});
  EXPECT_EQ(compute_reference(c).loss.value[0], 0.0);
}

// dcor: a non-finite component in a valid sample gives NaN; masked positions stay exact 0.
TEST(ReferenceSemantics, DcorNonFinite) {
  RandomOptions o;
  o.T = 4;
  Case c = random_case(DivergenceId::masked_unbiased_dcor, 41, o);
  c.inputs["samples_1"].set(0, kInf);  // position (0, 0) is valid
  Expected e = compute_reference(c);
  EXPECT_TRUE(std::isnan(e.loss.value[0]));
  const auto& g = e.grads.at("samples_1");
  EXPECT_TRUE(std::isnan(g.value[0]));
  EXPECT_EQ(g.value[1 * 2], 0.0);  // position (0, 1) is masked (D1 = 2)
}

// dcor(X, X) = V/(V + eps) is just below 1, within float32's error of the clamp edge: the
// reference gives the unclamped gradient and an allowance of exactly its magnitude (float32 may
// clamp). Masked positions stay exact zeros without allowance.
TEST(ReferenceSemantics, DcorClampEdgeAllowance) {
  RandomOptions o;
  o.T = 4;
  o.D2 = o.D1;
  Case c = random_case(DivergenceId::masked_unbiased_dcor, 42, o);
  c.inputs["samples_2"] = c.inputs["samples_1"];
  Expected e = compute_reference(c);
  EXPECT_GT(e.loss.value[0], 0.999);
  EXPECT_LT(e.loss.value[0], 1.0);
  int nonzero = 0;
  for (const auto& [role, g] : e.grads)
    for (std::size_t i = 0; i < g.value.size(); ++i) {
      EXPECT_NEAR(g.jump[i], std::fabs(g.value[i]), 1e-15 * std::fabs(g.value[i])) << role << "[" << i << "]";
      nonzero += g.value[i] != 0.0;
    }
  EXPECT_GT(nonzero, 0);
}

// With eps = 0, dcor(X, X) = V / sqrt(V V) = 1: exactly at the clamp edge. Whichever side R's
// rounding puts the reference on, a float32 result may be clamped or not, so no valid gradient
// element is an exact zero and each has an allowance and a scale (the unclamped gradient is
// 0 in exact arithmetic, by Cauchy-Schwarz, but float32 returns rounding noise).
TEST(ReferenceSemantics, DcorAtTheClampEdgeHasNoExactZeros) {
  RandomOptions o;
  o.T = 4;
  o.D2 = o.D1;
  Case c = random_case(DivergenceId::masked_unbiased_dcor, 43, o);
  c.inputs["samples_2"] = c.inputs["samples_1"];
  c.params.safety_factor = 0.0;
  Expected e = compute_reference(c);
  EXPECT_NEAR(e.loss.value[0], 1.0, 1e-15);
  for (const auto& [role, g] : e.grads) {
    const Tensor& in = *c.input(role);
    for (std::size_t i = 0; i < g.value.size(); ++i) {
      if (std::isnan(in.get(static_cast<std::int64_t>(i)))) continue;  // masked
      EXPECT_EQ(g.exact_zero[i], 0) << role << "[" << i << "]";
      EXPECT_GT(g.scale[i], 0.0) << role << "[" << i << "]";
    }
  }
}

// Shapes and dtypes of the expected tensors; bad input is rejected with the argument named.
TEST(ReferenceSemantics, ShapesDtypesAndValidation) {
  RandomOptions o;
  o.dtype = DType::bf16;
  Case c = random_case(DivergenceId::total_variation, 51, o);
  set_reduction(c, "none");
  Expected e = compute_reference(c, Precision::mpfr50);
  EXPECT_EQ(e.loss.dtype, DType::f32);
  EXPECT_EQ(e.loss.shape, (Shape{2}));
  EXPECT_EQ(e.grads.at("clean_logits").dtype, DType::bf16);
  EXPECT_EQ(e.grads.at("clean_logits").shape, (Shape{2, 3, 6}));
  EXPECT_EQ(e.grads.at("clean_logits").scale.size(), 36u);
  Case bad = random_case(DivergenceId::temperature_scaled_masked_kl_divergence, 52);
  bad.params.temperature = -1.0;
  try {
    compute_reference(bad);
    FAIL() << "no error for temperature = -1";
  } catch (const InvalidArgument& err) {
    EXPECT_NE(std::string(err.what()).find("temperature"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace divcheck

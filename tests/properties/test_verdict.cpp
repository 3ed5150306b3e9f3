// Unit tests of the tolerance model and judge() on hand-made Expected values: every mismatch
// kind, the bf16 output-rounding term, the overflow threshold, missing and misshapen outputs,
// the first-8 list and the summary line. Every expected bound is derived in a comment.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>

#include "core/case.hpp"
#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "properties/mismatch_names.hpp"
#include "properties/tolerance_model.hpp"
#include "properties/verdict.hpp"

namespace divcheck {
namespace {

constexpr double kU = 0x1p-24;
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kFltMax = static_cast<double>(std::numeric_limits<float>::max());

// masked_kl_divergence with (1, 1, V) logits of dtype dt (values irrelevant to judge).
Case kl_case(DType dt, std::int64_t v = 3) {
  Case c;
  c.id = DivergenceId::masked_kl_divergence;
  c.inputs["input_logits"] = Tensor(dt, {1, 1, v});
  c.inputs["target_logits"] = Tensor(dt, {1, 1, v});
  c.wants_grad = {"input_logits"};
  c.grad_output = Tensor::scalar_f32(1.0f);
  validate_case(c);
  return c;
}

ExpectedTensor expected(DType dt, Shape shape, std::vector<double> values, double scale = 1.0) {
  ExpectedTensor e;
  e.dtype = dt;
  e.shape = std::move(shape);
  e.value = std::move(values);
  e.scale.assign(e.value.size(), scale);
  e.jump.assign(e.value.size(), 0.0);
  e.exact_zero.assign(e.value.size(), 0);
  return e;
}

Tensor tensor(DType dt, Shape shape, const std::vector<double>& values) {
  Tensor t(dt, std::move(shape));
  for (std::size_t i = 0; i < values.size(); ++i) t.set(static_cast<std::int64_t>(i), values[i]);
  return t;
}

// Loss-only verdict of a masked_kl case (the gradient is expected and given as exact zeros).
Verdict judge_loss(double got, ExpectedTensor loss) {
  Case c = kl_case(DType::f32);
  Expected e;
  e.loss = std::move(loss);
  e.grads["input_logits"] = expected(DType::f32, {1, 1, 3}, {0, 0, 0});
  Outputs o;
  o.loss = Tensor::scalar_f32(static_cast<float>(got));
  o.grads["input_logits"] = Tensor(DType::f32, {1, 1, 3});
  return judge(c, o, e);
}

const Mismatch* first_mismatch(const Verdict& v, const std::string& name) {
  for (const auto& t : v.tensors)
    if (t.name == name && !t.first.empty()) return &t.first.front();
  return nullptr;
}

TEST(SummationDepth, CeilOfBlocksPlusSixteen) {
  EXPECT_EQ(summation_depth(1), 17.0);     // ceil(1/1024) + 16
  EXPECT_EQ(summation_depth(1024), 17.0);  // one full block
  EXPECT_EQ(summation_depth(1025), 18.0);
  EXPECT_EQ(summation_depth(4099), 21.0);  // ceil(4099/1024) = 5
}

TEST(ElementBound, FormulaTermByTerm) {
  // f32 output: (c + sigma) u scale + jump + u |r| + 2^-149.
  BoundInputs f32{8.0, 34.0, DType::f32};
  EXPECT_EQ(element_bound(f32, 1.0, 0.0, 1.0), 42 * kU + kU + 0x1p-149);
  EXPECT_EQ(element_bound(f32, 0.0, 0.25, 0.0), 0.25 + 0x1p-149);
  // bf16 output: the final rounding term is 2^-8 |r|, the floor bf16's smallest subnormal 2^-133.
  BoundInputs bf16{8.0, 17.0, DType::bf16};
  EXPECT_EQ(element_bound(bf16, 0.0, 0.0, 2.0), 2.0 * 0x1p-8 + 0x1p-133);
  // f16: 2^-11 |r| + 2^-24.
  BoundInputs f16{8.0, 17.0, DType::f16};
  EXPECT_EQ(element_bound(f16, 0.0, 0.0, 4.0), 4.0 * 0x1p-11 + 0x1p-24);
}

TEST(CaseSigmas, PerRowKind) {
  // masked_kl, V = 3, B*T = 1: loss sigma(3) + sigma(1) = 34, gradients sigma(3) = 17.
  CaseSigmas s = case_sigmas(kl_case(DType::f32));
  EXPECT_EQ(s.loss, 34.0);
  EXPECT_EQ(s.grads.at("input_logits"), 17.0);
  EXPECT_EQ(s.grads.at("target_logits"), 17.0);

  Case t;  // tvd_prob (N, V) = (3, 2050): loss sigma(2050) + sigma(3) = 19 + 17; gradient 1
  t.id = DivergenceId::tvd_prob;
  t.params.reduction = "sum";
  t.inputs["p"] = Tensor(DType::f32, {3, 2050});
  t.inputs["q"] = Tensor(DType::f32, {3, 2050});
  validate_case(t);
  s = case_sigmas(t);
  EXPECT_EQ(s.loss, 36.0);
  EXPECT_EQ(s.grads.at("p"), 1.0);

  Case d;  // dcor with 5 of 6 positions valid, D1 = 2, D2 = 3: sigma(25) + sigma(5) = 34
  d.id = DivergenceId::masked_unbiased_dcor;
  d.inputs["samples_1"] = Tensor(DType::f32, {2, 3, 2});
  d.inputs["samples_2"] = Tensor(DType::f32, {2, 3, 3});
  Tensor m(DType::boolean, {2, 3});
  for (int i = 0; i < 5; ++i) m.set(i, 1);
  d.inputs["attention_mask"] = m;
  validate_case(d);
  s = case_sigmas(d);
  EXPECT_EQ(s.loss, 34.0);
  EXPECT_EQ(s.grads.at("samples_2"), 34.0);

  Case f;  // fused: B*T = 6, H = 5, V = 7
  f.id = DivergenceId::fused_linear_masked_kl_divergence;
  f.params.reduction = "sequence_mean";
  f.inputs["student_hidden"] = Tensor(DType::f32, {2, 3, 5});
  f.inputs["teacher_hidden"] = Tensor(DType::f32, {2, 3, 5});
  f.inputs["lm_head_weight"] = Tensor(DType::f32, {7, 5});
  validate_case(f);
  s = case_sigmas(f);
  EXPECT_EQ(s.loss, 51.0);                          // sigma(7) + sigma(6) + sigma(5)
  EXPECT_EQ(s.grads.at("student_hidden"), 34.0);    // sigma(7) + sigma(5)
  EXPECT_EQ(s.grads.at("lm_head_weight"), 51.0);    // + sigma(6): the sum over tokens
}

TEST(Judge, ExactMatchPassesWithRatioZero) {
  Verdict v = judge_loss(0.5, expected(DType::f32, {}, {0.5}));
  EXPECT_TRUE(v.pass) << v.summary();
  EXPECT_EQ(v.worst_ratio, 0.0);
  EXPECT_EQ(v.summary(), "PASS worst 0 of bound");
}

TEST(Judge, BoundEdgeOnBothSides) {
  // Loss bound for r = 1, scale 1, c = 8, sigma = 34: 42 u + u |r| + 2^-149 = 43 u (+ tiny).
  // 1 + 42 u = 1 + 21 * 2^-23 is a float: within bound (ratio 42/43).
  Verdict in = judge_loss(1.0 + 42 * kU, expected(DType::f32, {}, {1.0}));
  EXPECT_TRUE(in.pass) << in.summary();
  EXPECT_NEAR(in.worst_ratio, 42.0 / 43.0, 1e-9);
  // 1 + 44 u exceeds it.
  Verdict out = judge_loss(1.0 + 44 * kU, expected(DType::f32, {}, {1.0}));
  EXPECT_FALSE(out.pass);
  ASSERT_NE(first_mismatch(out, "loss"), nullptr);
  EXPECT_EQ(first_mismatch(out, "loss")->kind, MismatchKind::out_of_bound);
  EXPECT_NEAR(out.worst_ratio, 44.0 / 43.0, 1e-9);
  EXPECT_NE(out.summary().find("loss: 1/1 wrong (first: out_of_bound at [0]"), std::string::npos) << out.summary();
}

TEST(Judge, ExactZeroMeansExactlyZero) {
  ExpectedTensor z = expected(DType::f32, {}, {0.0}, 1e6);  // a huge scale must not excuse it
  z.exact_zero = {1};
  EXPECT_TRUE(judge_loss(0.0, z).pass);
  EXPECT_TRUE(judge_loss(-0.0, z).pass);
  Verdict v = judge_loss(1e-30, z);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_mismatch(v, "loss")->kind, MismatchKind::not_exact_zero);
  EXPECT_EQ(first_mismatch(judge_loss(kNaN, z), "loss")->kind, MismatchKind::not_exact_zero);
}

TEST(Judge, NanWhereAndOnlyWhereTheReferenceIsNan) {
  EXPECT_TRUE(judge_loss(kNaN, expected(DType::f32, {}, {kNaN})).pass);
  Verdict a = judge_loss(1.0, expected(DType::f32, {}, {kNaN}));
  EXPECT_EQ(first_mismatch(a, "loss")->kind, MismatchKind::nan_mismatch);
  Verdict b = judge_loss(kNaN, expected(DType::f32, {}, {1.0}, 1e30));
  EXPECT_EQ(first_mismatch(b, "loss")->kind, MismatchKind::nan_mismatch);
}

TEST(Judge, InfinitiesMustMatchInSign) {
  EXPECT_TRUE(judge_loss(kInf, expected(DType::f32, {}, {kInf})).pass);
  EXPECT_EQ(first_mismatch(judge_loss(-kInf, expected(DType::f32, {}, {kInf})), "loss")->kind, MismatchKind::inf_mismatch);
  EXPECT_EQ(first_mismatch(judge_loss(kFltMax, expected(DType::f32, {}, {kInf})), "loss")->kind, MismatchKind::inf_mismatch);
  // Output +inf where the reference is 1: far from overflow.
  EXPECT_EQ(first_mismatch(judge_loss(kInf, expected(DType::f32, {}, {1.0})), "loss")->kind, MismatchKind::inf_mismatch);
}

TEST(Judge, OverflowThreshold) {
  // A reference beyond float's range counts as +inf.
  const double beyond = 3.5e38;
  ExpectedTensor e = expected(DType::f32, {}, {beyond}, 0.0);
  EXPECT_TRUE(judge_loss(kInf, e).pass);
  // FLT_MAX is 0.97e37 below it; the bound (u |r| ~ 2.1e31) does not reach the threshold.
  EXPECT_EQ(first_mismatch(judge_loss(kFltMax, e), "loss")->kind, MismatchKind::inf_mismatch);

  // Reference just above FLT_MAX, by 2^-30 relative: the bound u |r| = 2^-24 |r| reaches back
  // below the threshold, so both FLT_MAX (|y - r| = 2^-30 FLT_MAX <= bound) and +inf pass.
  const double just_above = kFltMax * (1.0 + 0x1p-30);
  ExpectedTensor e2 = expected(DType::f32, {}, {just_above}, 0.0);
  EXPECT_TRUE(judge_loss(kFltMax, e2).pass);
  EXPECT_TRUE(judge_loss(kInf, e2).pass);
  EXPECT_FALSE(judge_loss(-kInf, e2).pass);

  // Reference just below FLT_MAX, within its bound of the threshold: +inf is accepted
  // (rounding could overflow), -inf is not; a reference of FLT_MAX / 2 does not accept +inf.
  const double just_below = kFltMax * (1.0 - 0x1p-30);
  EXPECT_TRUE(judge_loss(kInf, expected(DType::f32, {}, {just_below}, 0.0)).pass);
  EXPECT_FALSE(judge_loss(-kInf, expected(DType::f32, {}, {just_below}, 0.0)).pass);
  EXPECT_FALSE(judge_loss(kInf, expected(DType::f32, {}, {kFltMax / 2}, 0.0)).pass);
}

TEST(Judge, OverflowedOutputPassesWhereTheBoundReachesTheThresholdOnItsSide) {
  // An f16 gradient whose bound exceeds f16's range (65504): the element is ill-conditioned, and a
  // value within the bound of the reference may round to an infinity of either sign, whatever the
  // sign of the reference. Found by the CPU gate (masked_unbiased_dcor, seed 20261260, case 27204:
  // reference 0 at a clamp's kink, bound 1.5e9, the output's unclamped side -1.3e6 stored as -inf).
  Case c = kl_case(DType::f16);
  Expected e;
  e.loss = expected(DType::f32, {}, {0.0});
  // bound = (c + sigma) * 2^-24 * scale + ... >= 2^-24 * 2^50 = 2^26: beyond 65504 either way.
  e.grads["input_logits"] = expected(DType::f16, {1, 1, 3}, {0.0, 1000.0, -1000.0}, 0x1p50);
  Outputs o;
  o.loss = Tensor::scalar_f32(0.0f);
  o.grads["input_logits"] = tensor(DType::f16, {1, 1, 3}, {-kInf, -kInf, kInf});
  EXPECT_TRUE(judge(c, o, e).pass);
  o.grads["input_logits"] = tensor(DType::f16, {1, 1, 3}, {kInf, kInf, -kInf});
  EXPECT_TRUE(judge(c, o, e).pass);
  // With a bound inside the range (scale 1), no infinity passes for a finite reference.
  e.grads["input_logits"] = expected(DType::f16, {1, 1, 3}, {0.0, 1000.0, -1000.0}, 1.0);
  Verdict v = judge(c, o, e);
  EXPECT_EQ(v.tensors.at(1).wrong, 3);
  EXPECT_EQ(v.tensors.at(1).first.at(0).kind, MismatchKind::inf_mismatch);
}

TEST(Judge, OverflowedReferenceAcceptsTheOtherInfinityOnlyWhereItsBoundReachesIt) {
  // A finite reference beyond f16's range (1e6 > 65504) counts as +inf; with a bound of 2^26 the
  // values within it reach below -65504 too, so -inf is the rounding of one of them and passes,
  // as for a finite reference (the rule is the same on both sides of the threshold).
  Case c = kl_case(DType::f16);
  Expected e;
  e.loss = expected(DType::f32, {}, {0.0});
  e.grads["input_logits"] = expected(DType::f16, {1, 1, 3}, {1e6, -1e6, 0.0}, 0x1p50);
  Outputs o;
  o.loss = Tensor::scalar_f32(0.0f);
  o.grads["input_logits"] = tensor(DType::f16, {1, 1, 3}, {-kInf, kInf, 0.0});
  EXPECT_TRUE(judge(c, o, e).pass) << judge(c, o, e).summary();
  // With scale 1 the bound (~2^-11 |r| ~ 490) stays on the reference's side: only its own sign.
  e.grads["input_logits"] = expected(DType::f16, {1, 1, 3}, {1e6, -1e6, 0.0}, 1.0);
  Verdict v = judge(c, o, e);
  EXPECT_EQ(v.tensors.at(1).wrong, 2);
  EXPECT_EQ(v.tensors.at(1).first.at(0).kind, MismatchKind::inf_mismatch);
  o.grads["input_logits"] = tensor(DType::f16, {1, 1, 3}, {kInf, -kInf, 0.0});
  EXPECT_TRUE(judge(c, o, e).pass) << judge(c, o, e).summary();
  // An infinite reference has no interval: the other infinity fails whatever the scale.
  e.grads["input_logits"] = expected(DType::f16, {1, 1, 3}, {kInf, -kInf, 0.0}, 0x1p50);
  o.grads["input_logits"] = tensor(DType::f16, {1, 1, 3}, {-kInf, kInf, 0.0});
  EXPECT_EQ(judge(c, o, e).tensors.at(1).wrong, 2);
}

TEST(Judge, Bf16OutputIncludesItsFinalRounding) {
  // A bf16 gradient with reference r = 1 + 2^-9 and scale 0: bf16 cannot hold r; its nearest
  // value is 1 (error 2^-9). The bound is 2^-8 |r| + 2^-133 > 2^-9, so 1 passes.
  Case c = kl_case(DType::bf16);
  Expected e;
  e.loss = expected(DType::f32, {}, {0.0});
  const double r = 1.0 + 0x1p-9;
  e.grads["input_logits"] = expected(DType::bf16, {1, 1, 3}, {r, r, r}, 0.0);
  Outputs o;
  o.loss = Tensor::scalar_f32(0.0f);
  o.grads["input_logits"] = tensor(DType::bf16, {1, 1, 3}, {1.0, 1.0, 1.0 + 0x1p-7});
  Verdict v = judge(c, o, e);
  // Elements 0 and 1 pass; element 2 is one bf16 ulp above (error 3 * 2^-9 > 2^-8 |r|).
  EXPECT_FALSE(v.pass);
  const TensorVerdict& g = v.tensors.at(1);
  EXPECT_EQ(g.name, "input_logits");
  EXPECT_EQ(g.wrong, 1);
  EXPECT_EQ(g.first.at(0).index, 2);
  EXPECT_EQ(g.first.at(0).kind, MismatchKind::out_of_bound);
  // The same error on an f32 output has no rounding term to hide in.
  Case c32 = kl_case(DType::f32);
  e.grads["input_logits"].dtype = DType::f32;
  o.grads["input_logits"] = tensor(DType::f32, {1, 1, 3}, {1.0, 1.0, 1.0});
  EXPECT_EQ(judge(c32, o, e).tensors.at(1).wrong, 3);
}

TEST(Judge, HalfUlpRoundingAboveAPowerOfTwoIsJudgedAtOneOverOnePlusU) {
  // docs/tolerances.md: the output-rounding term is tight. r = 1 + u_out is the midpoint between
  // 1 and the next 16-bit value 1 + 2u_out, so either neighbour errs by exactly u_out, and with
  // scale 0 the bound is u_out·r + floor_out: the ratio is 1/(1 + u_out + floor_out/u_out),
  // 1/(1 + 2^-8 + 2^-125) = 0.9961089 for bf16 and 1/(1 + 2^-11 + 2^-13) = 0.9993900 for f16,
  // the worst cases the long CPU gates show for tvd_prob's 16-bit gradients.
  // The numbers docs/tolerances.md quotes, to seven digits, beside each dtype.
  for (auto [dt, documented] : {std::pair{DType::bf16, 0.9961089}, std::pair{DType::f16, 0.9993900}}) {
    const double u = unit_roundoff(dt);
    const double r = 1.0 + u;
    Case c = kl_case(dt);
    Expected e;
    e.loss = expected(DType::f32, {}, {0.0});
    e.grads["input_logits"] = expected(dt, {1, 1, 3}, {r, r, r}, 0.0);
    Outputs o;
    o.loss = Tensor::scalar_f32(0.0f);
    o.grads["input_logits"] = tensor(dt, {1, 1, 3}, {1.0, 1.0 + 2 * u, 1.0});
    const TensorVerdict g = judge(c, o, e).tensors.at(1);
    EXPECT_EQ(g.wrong, 0) << short_name(dt);
    EXPECT_DOUBLE_EQ(g.worst_ratio, 1.0 / (1.0 + u + min_subnormal(dt) / u)) << short_name(dt);
    EXPECT_NEAR(g.worst_ratio, documented, 5e-8) << short_name(dt);
  }
}

TEST(Judge, MissingAndMisshapenOutputs) {
  Case c = kl_case(DType::f32);
  Expected e;
  e.loss = expected(DType::f32, {}, {0.0});
  e.grads["input_logits"] = expected(DType::f32, {1, 1, 3}, {0, 0, 0});
  Outputs none;
  Verdict v = judge(c, none, e);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(first_mismatch(v, "loss")->kind, MismatchKind::missing);
  EXPECT_EQ(first_mismatch(v, "input_logits")->kind, MismatchKind::missing);
  EXPECT_EQ(v.tensors.at(1).wrong, 3);

  Outputs wrong_shape;
  wrong_shape.loss = Tensor(DType::f32, {1});  // (1,) instead of ()
  wrong_shape.grads["input_logits"] = Tensor(DType::f32, {1, 3});
  v = judge(c, wrong_shape, e);
  EXPECT_EQ(first_mismatch(v, "loss")->kind, MismatchKind::shape);
  EXPECT_EQ(first_mismatch(v, "input_logits")->kind, MismatchKind::shape);

  Outputs wrong_dtype;
  wrong_dtype.loss = Tensor::scalar_f32(0.0f);
  wrong_dtype.grads["input_logits"] = Tensor(DType::bf16, {1, 1, 3});  // f32 expected
  v = judge(c, wrong_dtype, e);
  EXPECT_TRUE(v.tensors.at(0).wrong == 0);
  EXPECT_EQ(first_mismatch(v, "input_logits")->kind, MismatchKind::shape);
  EXPECT_NE(v.summary().find("grad input_logits: 3/3 wrong (first: shape)"), std::string::npos) << v.summary();
}

TEST(Judge, KeepsTheFirstEightMismatchesInOrder) {
  Case c = kl_case(DType::f32, 20);
  Expected e;
  e.loss = expected(DType::f32, {}, {0.0});
  std::vector<double> ref(20, 1.0), got(20, 2.0);
  got[3] = 1.0;  // one correct element
  e.grads["input_logits"] = expected(DType::f32, {1, 1, 20}, ref);
  Outputs o;
  o.loss = Tensor::scalar_f32(0.0f);
  o.grads["input_logits"] = tensor(DType::f32, {1, 1, 20}, got);
  Verdict v = judge(c, o, e);
  const TensorVerdict& g = v.tensors.at(1);
  EXPECT_EQ(g.total, 20);
  EXPECT_EQ(g.wrong, 19);
  ASSERT_EQ(g.first.size(), 8u);
  const std::int64_t want[8] = {0, 1, 2, 4, 5, 6, 7, 8};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(g.first[i].index, want[i]);
  EXPECT_GT(v.worst_ratio, 1.0);
}

TEST(Judge, UnrequestedGradientsAreIgnored) {
  Case c = kl_case(DType::f32);
  Expected e;
  e.loss = expected(DType::f32, {}, {0.0});
  e.grads["input_logits"] = expected(DType::f32, {1, 1, 3}, {0, 0, 0});
  Outputs o;
  o.loss = Tensor::scalar_f32(0.0f);
  o.grads["input_logits"] = Tensor(DType::f32, {1, 1, 3});
  o.grads["target_logits"] = tensor(DType::f32, {1, 1, 3}, {kNaN, kNaN, kNaN});
  EXPECT_TRUE(judge(c, o, e).pass);
}

TEST(Judge, InconsistentExpectedIsAnInvalidArgument) {
  Case c = kl_case(DType::f32);
  Expected e;
  e.loss = expected(DType::f32, {}, {0.0});
  e.grads["input_logits"] = expected(DType::f32, {1, 1, 3}, {0, 0, 0});
  e.grads["input_logits"].scale.pop_back();  // 2 scales for 3 values
  Outputs o;
  o.loss = Tensor::scalar_f32(0.0f);
  o.grads["input_logits"] = Tensor(DType::f32, {1, 1, 3});
  try {
    judge(c, o, e);
    FAIL() << "no exception";
  } catch (const InvalidArgument& ex) {
    EXPECT_EQ(ex.argument(), "expected.grads.input_logits.scale");
  }
  e.grads["input_logits"] = expected(DType::f32, {1, 1, 4}, {0, 0, 0});  // shape holds 4
  EXPECT_THROW(judge(c, o, e), InvalidArgument);
  Case bad = c;
  bad.params.temperature = -1.0;  // not a parameter of masked_kl: still valid
  bad.inputs.erase("target_logits");
  EXPECT_THROW(judge(bad, o, e), InvalidArgument);
}

TEST(MismatchNames, AllKindsNamed) {
  EXPECT_EQ(mismatch_kind_name(MismatchKind::out_of_bound), "out_of_bound");
  EXPECT_EQ(mismatch_kind_name(MismatchKind::not_exact_zero), "not_exact_zero");
  EXPECT_EQ(mismatch_kind_name(MismatchKind::nan_mismatch), "nan_mismatch");
  EXPECT_EQ(mismatch_kind_name(MismatchKind::inf_mismatch), "inf_mismatch");
  EXPECT_EQ(mismatch_kind_name(MismatchKind::missing), "missing");
  EXPECT_EQ(mismatch_kind_name(MismatchKind::shape), "shape");
}

}  // namespace
}  // namespace divcheck

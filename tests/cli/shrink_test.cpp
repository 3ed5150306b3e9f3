// Unit tests of the greedy shrinker on real generator output (a tvd_prob case): the limits,
// the stop reasons, and that "always failing" walks down to a case with no further shrink; and
// of the structural walk (whole sequences, positions and columns removed): the slicing of every
// input and of the upstream gradient, bytes kept, and the walk down to the one position and
// column a failure needs (the shape of the CPU gate's Hellinger failure of 2026-12-05).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>

#include "cli/shrink.hpp"
#include "cli/structural_shrink.hpp"
#include "core/case_file.hpp"
#include "properties/generators.hpp"

namespace divcheck::gate {
namespace {

rc::Shrinkable<Case> sample() {
  const std::string family(families(DivergenceId::tvd_prob).front().name);
  return draw_case(DivergenceId::tvd_prob, family, 11, 40);
}

std::int64_t elements(const Case& c) {
  std::int64_t n = 0;
  for (const auto& [role, t] : c.inputs) n += t.numel();
  return n;
}

TEST(Shrink, NeverFailingCandidatesKeepTheStart) {
  const auto s = sample();
  const ShrinkResult r = shrink_failing(s, [](const Case&) { return false; }, ShrinkLimits{1000000, 600.0});
  EXPECT_EQ(r.steps, 0);
  EXPECT_EQ(r.stopped_by, "minimal");
  EXPECT_EQ(encode_case(r.minimal), encode_case(s.value()));
}

TEST(Shrink, AlwaysFailingReachesACaseWithoutShrinks) {
  const auto s = sample();
  const ShrinkResult r = shrink_failing(s, [](const Case&) { return true; }, ShrinkLimits{100000, 600.0});
  EXPECT_EQ(r.stopped_by, "minimal");
  EXPECT_GT(r.steps, 0);
  EXPECT_EQ(r.steps, r.attempts);  // every candidate accepted: one attempt per step
  EXPECT_LE(elements(r.minimal), elements(s.value()));
}

TEST(Shrink, AttemptLimit) {
  // Each walk has the budget. Here the generator's 3 shrinks already leave one row and one
  // column, so the structural walk has nothing to try.
  const ShrinkResult r = shrink_failing(sample(), [](const Case&) { return true; }, ShrinkLimits{3, 600.0});
  EXPECT_EQ(r.minimal.inputs.at("p").shape(), (Shape{1, 1}));
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.stopped_by, "attempt limit");
}

TEST(Shrink, TheStructuralWalkRunsAfterTheGeneratorsWalkSpentItsAttempts) {
  // A logit case: after one generator shrink (its attempt limit) the structural walk removes
  // up to one block on its own budget of one.
  const auto s = draw_case(DivergenceId::squared_hellinger_distance, "random_logits", 5, 80);
  const ShrinkResult one = shrink_failing(s, [](const Case&) { return true; }, ShrinkLimits{1, 600.0});
  ASSERT_EQ(one.stopped_by, "attempt limit");
  const Tensor& y = one.minimal.inputs.at("clean_logits");
  std::cout << "[ shrink ] drawn " << s.value().inputs.at("clean_logits").numel() << " logits per side, after both walks "
            << y.shape()[0] << " x " << y.shape()[1] << " x " << y.shape()[2] << "\n";
  EXPECT_EQ(one.attempts, 2);
  EXPECT_EQ(one.steps, 2);
}

TEST(Shrink, TimeLimit) {
  const ShrinkResult r = shrink_failing(sample(), [](const Case&) { return true; }, ShrinkLimits{1000, 1e-12});
  EXPECT_EQ(r.attempts, 0);
  EXPECT_EQ(r.stopped_by, "time limit");
}

TEST(Shrink, DeterministicForTheSamePredicate) {
  // "fails while some p element is nonzero": a data-dependent predicate, same walk twice.
  auto pred = [](const Case& c) {
    const Tensor& p = c.inputs.at("p");
    for (std::int64_t i = 0; i < p.numel(); ++i)
      if (p.get(i) != 0.0) return true;
    return false;
  };
  const ShrinkResult a = shrink_failing(sample(), pred, ShrinkLimits{500, 600.0});
  const ShrinkResult b = shrink_failing(sample(), pred, ShrinkLimits{500, 600.0});
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.attempts, b.attempts);
  EXPECT_EQ(encode_case(a.minimal), encode_case(b.minimal));
}

// A logit case (B, T, V) = (3, 4, 5) with reduction "none" (grad_output (B,)), a support mask,
// every value distinct so that slices can be traced, one NaN with a payload.
Case logit_sample() {
  Case c;
  c.id = DivergenceId::squared_hellinger_distance;
  c.params.reduction = "none";
  Tensor y(DType::f32, {3, 4, 5}), x(DType::bf16, {3, 4, 5}), s(DType::boolean, {3, 4, 5});
  Tensor m(DType::boolean, {3, 4});
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    y.set(i, static_cast<double>(i));
    s.set(i, i % 3 != 0 ? 1.0 : 0.0);
  }
  x = Tensor(DType::f32, {3, 4, 5});
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, -static_cast<double>(i) / 8.0);
  const std::uint32_t payload = 0x7fc00123u;
  std::memcpy(x.data() + 4 * 7, &payload, 4);  // element 7: (0, 1, 2)
  for (std::int64_t i = 0; i < m.numel(); ++i) m.set(i, 1.0);
  c.inputs["clean_logits"] = y;
  c.inputs["noisy_logits"] = x;
  c.inputs["support_mask"] = s;
  c.inputs["attention_mask"] = m;
  c.wants_grad = {"clean_logits"};
  c.grad_output = Tensor(DType::f32, {3});
  for (std::int64_t b = 0; b < 3; ++b) c.grad_output.set(b, 10.0 + static_cast<double>(b));
  validate_case(c);
  return c;
}

TEST(StructuralShrink, RemovesABlockFromEveryInputAndTheUpstreamGradientKeepingTheBytes) {
  const Case c = logit_sample();
  const auto no_b1 = without_block(c, "B", 1, 1);
  ASSERT_TRUE(no_b1.has_value());
  EXPECT_EQ(no_b1->inputs.at("clean_logits").shape(), (Shape{2, 4, 5}));
  EXPECT_EQ(no_b1->inputs.at("support_mask").shape(), (Shape{2, 4, 5}));
  EXPECT_EQ(no_b1->inputs.at("attention_mask").shape(), (Shape{2, 4}));
  EXPECT_EQ(no_b1->grad_output.get(1), 12.0);  // sequence 2's upstream gradient moved to index 1
  EXPECT_EQ(no_b1->inputs.at("clean_logits").get(20), 40.0);  // (1, 0, 0) is the old (2, 0, 0)
  const auto no_v = without_block(c, "V", 1, 2);  // columns 1 and 2 gone
  ASSERT_TRUE(no_v.has_value());
  EXPECT_EQ(no_v->inputs.at("noisy_logits").shape(), (Shape{3, 4, 3}));
  EXPECT_EQ(no_v->grad_output.numel(), 3);
  EXPECT_EQ(no_v->inputs.at("clean_logits").get(3), 5.0);  // (0, 1, 0) is the old (0, 1, 0): element 5
  EXPECT_EQ(no_v->inputs.at("support_mask").get(4), 1.0);  // (0, 1, 1) is the old (0, 1, 3): 8 % 3 != 0
  EXPECT_EQ(no_v->inputs.at("support_mask").get(5), 0.0);  // (0, 1, 2) is the old (0, 1, 4): 9 % 3 == 0
  const auto no_t = without_block(c, "T", 0, 1);  // the NaN's payload survives the copy
  ASSERT_TRUE(no_t.has_value());
  std::uint32_t bits = 0;
  std::memcpy(&bits, no_t->inputs.at("noisy_logits").data() + 4 * 2, 4);  // (0, 0, 2) is the old (0, 1, 2)
  EXPECT_EQ(bits, 0x7fc00123u);
  // Never the last index of a dimension, never a dimension the row does not have.
  EXPECT_FALSE(without_block(c, "B", 0, 3).has_value());
  EXPECT_FALSE(without_block(c, "N", 0, 1).has_value());
  EXPECT_FALSE(without_block(c, "V", 4, 2).has_value());
}

TEST(StructuralShrink, WalksDownToTheOnePositionAndColumnAFailureNeeds) {
  // "Fails" while some valid position of some sequence holds clean logit 27 (sequence 1,
  // position 1, column 2): the walk must end at (1, 1, 1) with that value.
  auto fails = [](const Case& c) {
    const Tensor& y = c.inputs.at("clean_logits");
    for (std::int64_t i = 0; i < y.numel(); ++i)
      if (y.get(i) == 27.0) return true;
    return false;
  };
  ShrinkResult r{logit_sample(), 0, 0, "minimal"};
  shrink_structure(r, fails, ShrinkLimits{1000, 600.0}, std::chrono::steady_clock::now());
  EXPECT_EQ(r.stopped_by, "minimal");
  EXPECT_EQ(r.minimal.inputs.at("clean_logits").shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(r.minimal.inputs.at("clean_logits").get(0), 27.0);
  EXPECT_EQ(r.minimal.grad_output.get(0), 11.0);  // sequence 1's
  EXPECT_GT(r.steps, 0);
  EXPECT_LE(r.attempts, 30);  // halving blocks: a handful per dimension
  // The same walk again: the same case (deterministic for a deterministic predicate).
  ShrinkResult again{logit_sample(), 0, 0, "minimal"};
  shrink_structure(again, fails, ShrinkLimits{1000, 600.0}, std::chrono::steady_clock::now());
  EXPECT_EQ(encode_case(again.minimal), encode_case(r.minimal));
  EXPECT_EQ(again.attempts, r.attempts);
}

TEST(StructuralShrink, StopsAtItsLimits) {
  ShrinkResult r{logit_sample(), 0, 0, "minimal"};
  shrink_structure(r, [](const Case&) { return true; }, ShrinkLimits{2, 600.0}, std::chrono::steady_clock::now());
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(r.stopped_by, "attempt limit");
  ShrinkResult t{logit_sample(), 0, 0, "minimal"};
  shrink_structure(t, [](const Case&) { return true; }, ShrinkLimits{1000, 1e-12}, std::chrono::steady_clock::now());
  EXPECT_EQ(t.attempts, 0);
  EXPECT_EQ(t.stopped_by, "time limit");
}

}  // namespace
}  // namespace divcheck::gate

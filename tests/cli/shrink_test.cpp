// Unit tests of the greedy shrinker on real generator output (a tvd_prob case): the limits,
// the stop reasons, and that "always failing" walks down to a case with no further shrink.
#include <gtest/gtest.h>

#include "cli/shrink.hpp"
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
  const ShrinkResult r = shrink_failing(sample(), [](const Case&) { return true; }, ShrinkLimits{3, 600.0});
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.stopped_by, "attempt limit");
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

}  // namespace
}  // namespace divcheck::gate

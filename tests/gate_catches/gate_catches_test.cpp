// Proves the property machinery catches every deliberately broken backend of tests/broken/:
// for each backend and each row it breaks, cases are drawn from that row's families with fixed
// seeds (deterministic), judged against the float128 reference, and the test requires that some
// case fails under the broken backend, and that the real CPU backend passes every such case. The
// first such case of each family is shrunk (RapidCheck's shrink tree from draw_case; a shrink is
// kept while the broken backend still fails and the CPU backend still passes); the smallest
// shrunk counterexample must be small, and it is printed.
// A broken backend that passes everything fails this test.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <optional>
#include <sstream>

#include "kernels/backend.hpp"
#include "properties/case_show.hpp"
#include "properties/generators.hpp"
#include "properties/verdict.hpp"
#include "reference/reference.hpp"
#include "relations/relations.hpp"
#include "tests/broken/broken_backends.hpp"

namespace divcheck {
namespace {

constexpr int kSeedsPerFamily = 24;    // draws per family before giving up on it
constexpr int kMaxShrinkEvals = 1500;  // shrink candidates tried at most, per caught family
constexpr std::int64_t kSmall = 200;   // float input values of a "small" counterexample

const Backend& cpu() {
  static const std::unique_ptr<Backend> b = make_cpu_backend();
  return *b;
}

struct Outcome {
  bool broken_fails = false;
  bool cpu_passes = false;
  std::string broken_summary, cpu_summary;
};

Outcome evaluate(const Backend& broken, const Case& c) {
  Outcome o;
  const Expected e = compute_reference(c);
  const Verdict vb = judge(c, compute(broken, c), e);
  const Verdict vc = judge(c, compute(cpu(), c), e);
  o.broken_fails = !vb.pass;
  o.cpu_passes = vc.pass;
  o.broken_summary = vb.summary();
  o.cpu_summary = vc.summary();
  return o;
}

std::int64_t float_values(const Case& c) {
  std::int64_t n = 0;
  for (const auto& [role, t] : c.inputs)
    if (is_floating(t.dtype())) n += t.numel();
  return n;
}

// Greedy shrinking: take the first shrink that still exposes the bug (broken fails, CPU
// passes), repeat from it, until no shrink does or the budget is spent.
rc::Shrinkable<Case> shrink(const Backend& broken, rc::Shrinkable<Case> cur, int& steps, int& evals) {
  bool progress = true;
  while (progress && evals < kMaxShrinkEvals) {
    progress = false;
    auto seq = cur.shrinks();
    for (auto next = seq.next(); next && evals < kMaxShrinkEvals; next = seq.next()) {
      ++evals;
      const Outcome o = evaluate(broken, next->value());
      if (o.broken_fails && o.cpu_passes) {
        cur = *next;
        ++steps;
        progress = true;
        break;
      }
    }
  }
  return cur;
}

class GateCatches : public ::testing::TestWithParam<std::string> {};

TEST_P(GateCatches, BrokenBackendFailsAndShrinksToASmallCase) {
  const std::string name = GetParam();
  const BrokenBackendInfo* entry = nullptr;
  for (const auto& b : broken_backend_catalog())
    if (b.name == name) entry = &b;
  ASSERT_NE(entry, nullptr);
  const std::unique_ptr<Backend> broken = make_broken_backend(name);

  for (DivergenceId id : entry->breaks) {
    SCOPED_TRACE(std::string(name_of(id)));
    // Every family gets a chance; the smallest shrunk counterexample over the families that
    // caught the bug is the one reported (RapidCheck shrinks the picks of a case in order and
    // never revisits an earlier one, so where shrinking starts matters).
    std::vector<std::string> catching;
    std::optional<Case> best;
    std::string best_report;
    for (const auto& fam : families(id)) {
      for (int k = 0; k < kSeedsPerFamily; ++k) {
        const std::uint64_t seed = 9000 + static_cast<std::uint64_t>(k);
        const int size = 10 + (k * 90) / kSeedsPerFamily;
        rc::Shrinkable<Case> s = draw_case(id, fam.name, seed, size);
        const Outcome o = evaluate(*broken, s.value());
        if (!o.broken_fails) continue;
        catching.emplace_back(fam.name);
        // The failure must be the bug's, not a disagreement of the real backend.
        EXPECT_TRUE(o.cpu_passes) << "the CPU backend fails the same case: " << o.cpu_summary << "\n"
                                  << describe_case(s.value());
        if (!o.cpu_passes) break;
        int steps = 0, evals = 0;
        const Case m = shrink(*broken, s, steps, evals).value();
        const Outcome om = evaluate(*broken, m);
        EXPECT_TRUE(om.broken_fails && om.cpu_passes);
        if (!best || float_values(m) < float_values(*best)) {
          best = m;
          std::ostringstream os;
          os << "family " << fam.name << " seed " << seed << " size " << size << "\n  original: " << o.broken_summary
             << "\n  shrunk in " << steps << " steps (" << evals << " candidates) to " << float_values(m)
             << " float values: " << om.broken_summary;
          best_report = os.str();
        }
        break;
      }
    }
    std::string fams;
    for (const auto& f : catching) fams += (fams.empty() ? "" : ", ") + f;
    ASSERT_TRUE(best.has_value()) << "broken backend " << name << " passed every drawn case of " << name_of(id)
                                  << " (it is supposed to be caught by: " << entry->caught_by << ")";
    EXPECT_LE(float_values(*best), kSmall) << describe_case(*best);
    std::cout << "[gate_catches] " << name << " / " << name_of(id) << ": caught by " << catching.size() << " families ("
              << fams << "); smallest counterexample from " << best_report << "\n"
              << describe_case(*best) << std::endl;
  }
}

// The metamorphic and structural properties catch the bugs too, without the reference's help
// for the relation itself: each broken backend against the property that is about its bug.
bool property_passes(const std::function<void()>& body) {
  std::ostringstream sink;
  std::streambuf* old_err = std::cerr.rdbuf(sink.rdbuf());
  std::streambuf* old_out = std::cout.rdbuf(sink.rdbuf());
  const bool ok = rc::check(body);
  std::cerr.rdbuf(old_err);
  std::cout.rdbuf(old_out);
  return ok;
}

TEST(PropertiesCatch, EachBrokenBackendFailsThePropertyAboutItsBug) {
  using D = DivergenceId;
  struct Expectation {
    std::string backend, property;
    std::function<void(const Backend&)> body;
  };
  const std::vector<Expectation> expectations = {
      {"masked_position_leaks", "mask invariance (masked_kl)",
       [](const Backend& b) { props::mask_invariance_property(b, D::masked_kl_divergence); }},
      {"no_max_subtraction", "shift invariance (masked_kl)",
       [](const Backend& b) { props::shift_property(b, D::masked_kl_divergence); }},
      {"nan_on_fully_masked", "declared bounds (jefferys)",
       [](const Backend& b) { props::bounds_property(b, D::jefferys_divergence); }},
      {"tvd_two_way_select", "exact zeros at ties (tvd_prob exact_ties)",
       [](const Backend& b) { props::exact_zeros_property(b, D::tvd_prob, "exact_ties"); }},
      {"tvd_two_way_select", "exact zeros on identical rows (total_variation)",
       [](const Backend& b) { props::exact_zeros_property(b, D::total_variation, "identical_rows"); }},
  };
  for (const auto& e : expectations) {
    const std::unique_ptr<Backend> b = make_broken_backend(e.backend);
    EXPECT_FALSE(property_passes([&] { e.body(*b); })) << e.backend << " passed the property " << e.property;
    EXPECT_TRUE(property_passes([&] { e.body(cpu()); })) << "the CPU backend fails the property " << e.property;
  }
}

INSTANTIATE_TEST_SUITE_P(BrokenBackends, GateCatches,
                         ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& b : broken_backend_catalog()) names.emplace_back(b.name);
                           return names;
                         }()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace divcheck

// The order in which the gate starts its cases: k-major over the selected divergences, so that
// a time budget cuts every divergence at about the same case index (a nightly with a budget
// must not leave the registry's last rows unrun), while each divergence's report is the same as
// in any other order.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/gate.hpp"
#include "kernels/backend.hpp"
#include "tests/cli/process.hpp"

namespace divcheck::testing {
namespace {

// The CPU backend, recording the divergence of every call (and optionally slowed down).
class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(std::chrono::milliseconds delay = {}) : cpu_(make_cpu_backend()), delay_(delay) {}
  std::string_view name() const override { return "cpu"; }
  Outputs run(const Case& c) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(c.id);
    }
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    return cpu_->run(c);
  }
  std::vector<DivergenceId> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::unique_ptr<Backend> cpu_;
  std::chrono::milliseconds delay_;
  mutable std::mutex mu_;
  mutable std::vector<DivergenceId> calls_;
};

gate::GateOptions options(const std::string& out_dir) {
  gate::GateOptions o;
  o.divergences = {DivergenceId::masked_kl_divergence, DivergenceId::total_variation, DivergenceId::tvd_prob};
  o.jobs = 1;  // one worker: the backend sees the cases in the order the gate starts them
  o.out_dir = out_dir;
  return o;
}

TEST(GateSchedule, StartsTheCasesKMajorAcrossTheDivergences) {
  ScratchDir dir;
  gate::GateOptions o = options(dir / "out");
  o.cases = 4;
  RecordingBackend backend;
  std::ostringstream out, err;
  const gate::GateRun run = gate::run_gate(o, backend, out, err);
  ASSERT_EQ(run.exit_code, 0) << out.str() << err.str();
  // Case k of every divergence (in the options' order) before case k + 1 of any.
  std::vector<DivergenceId> expected;
  for (int k = 0; k < 4; ++k) expected.insert(expected.end(), o.divergences.begin(), o.divergences.end());
  EXPECT_EQ(backend.calls(), expected);
  // The report is per divergence in registry order, each case list in k order.
  ASSERT_EQ(run.report.divergences.size(), 3u);
  for (const auto& d : run.report.divergences) {
    ASSERT_EQ(d.case_list.size(), 4u) << d.name;
    for (std::size_t i = 0; i < d.case_list.size(); ++i) EXPECT_EQ(d.case_list[i].k, static_cast<std::int64_t>(i));
  }
}

TEST(GateSchedule, ATimeBudgetCutsEveryDivergenceAlike) {
  ScratchDir dir;
  gate::GateOptions o = options(dir / "out");
  o.cases = 1000;       // far more than the budget allows
  o.time_budget = 1.5;  // seconds: ~15 cases at 100 ms each
  RecordingBackend backend(std::chrono::milliseconds(100));
  std::ostringstream out, err;
  const gate::GateRun run = gate::run_gate(o, backend, out, err);
  ASSERT_EQ(run.exit_code, 0) << out.str() << err.str();
  ASSERT_TRUE(run.report.budget_exhausted);
  ASSERT_EQ(run.report.divergences.size(), 3u);
  const std::int64_t first = run.report.divergences[0].cases;
  EXPECT_GE(first, 1);
  for (const auto& d : run.report.divergences) {
    SCOPED_TRACE(d.name);
    EXPECT_TRUE(d.budget_exhausted);
    // k-major: the divergences differ by at most the one round the budget interrupted.
    EXPECT_LE(first - d.cases, 1);
    EXPECT_GE(first - d.cases, 0);
  }
  // The last divergence ran too (in divergence-major order it would have run nothing).
  EXPECT_GE(run.report.divergences.back().cases, 1) << err.str();
}

}  // namespace
}  // namespace divcheck::testing

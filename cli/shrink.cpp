// Greedy first-failing-shrink search.
#include "cli/shrink.hpp"

#include "cli/rapidcheck_lock.hpp"
#include "cli/structural_shrink.hpp"

#include <chrono>
#include <optional>

namespace divcheck::gate {

ShrinkResult shrink_failing(const rc::Shrinkable<Case>& start, const std::function<bool(const Case&)>& still_fails,
                            const ShrinkLimits& limits) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::unique_lock<std::mutex> rc_lock(rapidcheck_mutex());  // held except while judging a candidate
  rc::Shrinkable<Case> current = start;
  ShrinkResult r{start.value(), 0, 0, "minimal"};
  bool improved = true;
  while (improved) {
    improved = false;
    auto candidates = current.shrinks();
    while (auto candidate = candidates.next()) {
      if (r.attempts >= limits.max_attempts) {
        r.stopped_by = "attempt limit";
        improved = false;
        break;
      }
      if (std::chrono::duration<double>(Clock::now() - t0).count() > limits.max_seconds) {
        r.stopped_by = "time limit";
        return r;  // the time limit ends both walks
      }
      ++r.attempts;
      std::optional<Case> value;
      try {
        value = candidate->value();
      } catch (...) {
        continue;  // a generator that cannot produce this shrink: not a counterexample
      }
      rc_lock.unlock();
      const bool fails = still_fails(*value);
      rc_lock.lock();
      if (fails) {
        current = *candidate;
        r.minimal = std::move(*value);
        ++r.steps;
        improved = true;
        break;
      }
    }
  }
  rc_lock.unlock();  // the structural walk draws nothing
  // Its own attempt budget: it needs few (halving blocks), and the generator's walk often ends
  // by spending all of its own.
  ShrinkResult structural{std::move(r.minimal), 0, 0, "minimal"};
  shrink_structure(structural, still_fails, limits, t0);
  r.minimal = std::move(structural.minimal);
  r.steps += structural.steps;
  r.attempts += structural.attempts;
  if (r.stopped_by == "minimal") r.stopped_by = structural.stopped_by;
  return r;
}

}  // namespace divcheck::gate

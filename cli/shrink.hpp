// Greedy shrinking of a failing case over its rc::Shrinkable: repeatedly take the first shrink
// that still fails, until none does (a local minimum) or a limit is hit; then the structural
// walk (structural_shrink.hpp: whole sequences, positions and columns removed while the case
// still fails), with an attempt budget of its own and the time left. With a deterministic backend the result depends only on
// the case and the attempt limit; the time limit is a safety net, and when it stops the search
// the report says so ("time limit").
#pragma once

#include <functional>
#include <string>

#include <rapidcheck.h>

#include "core/case.hpp"

namespace divcheck::gate {

struct ShrinkLimits {
  int max_attempts = 1000;     // candidate cases evaluated, in each of the two walks
  double max_seconds = 60.0;   // wall time for one case's search, both walks
};

struct ShrinkResult {
  Case minimal;
  int steps = 0;          // accepted shrinks (both walks)
  int attempts = 0;       // candidates evaluated (both walks)
  std::string stopped_by; // "minimal", "attempt limit", "time limit" (the first walk's, unless it ended minimal)
};

ShrinkResult shrink_failing(const rc::Shrinkable<Case>& start, const std::function<bool(const Case&)>& still_fails,
                            const ShrinkLimits& limits);

}  // namespace divcheck::gate

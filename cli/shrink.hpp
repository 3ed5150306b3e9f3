// Greedy shrinking of a failing case over its rc::Shrinkable: repeatedly take the first shrink
// that still fails, until none does (a local minimum) or a limit is hit. With a deterministic
// backend the result depends only on the case and the attempt limit; the time limit is a
// safety net, and when it stops the search the report says so ("time limit").
#pragma once

#include <functional>
#include <string>

#include <rapidcheck.h>

#include "core/case.hpp"

namespace divcheck::gate {

struct ShrinkLimits {
  int max_attempts = 1000;     // candidate cases evaluated
  double max_seconds = 60.0;   // wall time for one case's search
};

struct ShrinkResult {
  Case minimal;
  int steps = 0;          // accepted shrinks
  int attempts = 0;       // candidates evaluated
  std::string stopped_by; // "minimal", "attempt limit", "time limit"
};

ShrinkResult shrink_failing(const rc::Shrinkable<Case>& start, const std::function<bool(const Case&)>& still_fails,
                            const ShrinkLimits& limits);

}  // namespace divcheck::gate

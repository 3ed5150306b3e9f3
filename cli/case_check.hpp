// Checking one case: backend -> Outputs, reference -> Expected, judge -> Verdict. An exception
// anywhere is a failure of the case (reported with its text), never a crash of the gate and
// never a pass. Shared by the gate, the shrinker, `repro` and `verify-results`.
#pragma once

#include <optional>
#include <string>

#include "core/case.hpp"
#include "kernels/backend.hpp"
#include "properties/verdict.hpp"
#include "reference/reference.hpp"

namespace divcheck::gate {

struct CaseCheck {
  std::optional<Outputs> outputs;    // absent when the backend threw
  std::optional<Expected> expected;  // absent when the reference threw (or was not reached)
  std::optional<Verdict> verdict;    // present when both ran
  std::string error;                 // "invalid case: ...", "backend <name> threw: ...", "reference threw: ...", or ""

  bool pass() const { return error.empty() && verdict && verdict->pass; }
  // Worst error in units of the bound; +inf when an exception stopped the check.
  double worst_ratio() const;
  // One line: the verdict's summary, or "ERROR <what threw>".
  std::string summary() const;
};

// Runs the backend through compute() (which validates the case) and the reference.
CaseCheck check_case(const Backend& backend, const Case& c, Precision precision = Precision::float128);

// Judges outputs that came from outside (a results file) against the reference.
CaseCheck check_outputs(const Case& c, Outputs outputs, Precision precision = Precision::float128);

}  // namespace divcheck::gate

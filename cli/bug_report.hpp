// The bug report `repro` and `verify-results` print for one case: divergence, parameters,
// input shapes and dtypes, provenance, the loss got vs reference, and per output the wrong
// elements side by side with the reference and their bound, then PASS or FAIL.
#pragma once

#include <iosfwd>
#include <string>

#include "cli/case_check.hpp"
#include "core/case.hpp"

namespace divcheck::gate {

// `source` says where the outputs came from ("backend cpu", "results file r.safetensors").
void print_case_header(std::ostream& os, const Case& c);
void print_bug_report(std::ostream& os, const Case& c, const CaseCheck& check, const std::string& source,
                      Precision precision);

// Parameter list of the case as "name=value, ..." (only the row's parameters).
std::string params_string(const Case& c);

}  // namespace divcheck::gate

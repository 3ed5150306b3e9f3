// check_case / check_outputs: exceptions become failures with their text.
#include "cli/case_check.hpp"

#include <limits>

namespace divcheck::gate {

double CaseCheck::worst_ratio() const {
  if (!error.empty() || !verdict) return std::numeric_limits<double>::infinity();
  return verdict->worst_ratio;
}

std::string CaseCheck::summary() const {
  if (!error.empty()) return "ERROR " + error;
  if (!verdict) return "ERROR no verdict";
  return verdict->summary();
}

namespace {

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

void judge_into(CaseCheck& r, const Case& c, Precision precision) {
  try {
    r.expected = compute_reference(c, precision);
  } catch (...) {
    r.error = "reference threw: " + what_of(std::current_exception());
    return;
  }
  try {
    r.verdict = judge(c, *r.outputs, *r.expected);
  } catch (...) {
    r.error = "judge threw: " + what_of(std::current_exception());
  }
}

}  // namespace

CaseCheck check_case(const Backend& backend, const Case& c, Precision precision) {
  CaseCheck r;
  try {  // a case the generator or a file got wrong is not the backend's failure
    validate_case(c);
  } catch (...) {
    r.error = "invalid case: " + what_of(std::current_exception());
    return r;
  }
  try {
    r.outputs = compute(backend, c);
  } catch (...) {
    r.error = "backend " + std::string(backend.name()) + " threw: " + what_of(std::current_exception());
    return r;
  }
  judge_into(r, c, precision);
  return r;
}

CaseCheck check_outputs(const Case& c, Outputs outputs, Precision precision) {
  CaseCheck r;
  r.outputs = std::move(outputs);
  judge_into(r, c, precision);
  return r;
}

}  // namespace divcheck::gate

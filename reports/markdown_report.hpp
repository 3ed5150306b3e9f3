// report.md: the human-readable summary of a run (run settings, environment, the divergence
// table, and each failure with its first mismatches and its repro command).
#pragma once

#include <string>

#include "reports/report_model.hpp"

namespace divcheck::report {

std::string to_markdown(const RunReport& r);

}  // namespace divcheck::report

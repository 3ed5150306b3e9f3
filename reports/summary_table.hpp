// The per-divergence table `divcheck check` prints at the end, and the failure list below it.
#pragma once

#include <string>
#include <vector>

#include "reports/report_model.hpp"

namespace divcheck::report {

// Columns: divergence | cases | passed | failed | worst (units of bound) | families | time | note.
// `note` says "budget exhausted: ran X of Y" when the time budget cut the divergence short.
std::vector<std::string> summary_header();
std::vector<std::vector<std::string>> summary_rows(const RunReport& r);
std::string summary_table(const RunReport& r);

// One block per failing case: summary, saved case file, repro and regenerate commands.
std::string failure_list(const RunReport& r);

std::string format_seconds(double s);  // "14.2 s"

}  // namespace divcheck::report

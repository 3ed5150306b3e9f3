// The end-of-run table and failure list (plain text, stdout).
#include "reports/summary_table.hpp"

#include <cstdio>
#include <sstream>

#include "reports/text_util.hpp"

namespace divcheck::report {

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::vector<std::string> summary_header() {
  return {"divergence", "cases", "passed", "failed", "forward only", "worst (of bound)", "families", "time", "note"};
}

std::vector<std::vector<std::string>> summary_rows(const RunReport& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& d : r.divergences) {
    std::string note;
    if (!d.not_run.empty())
      note = "not run: " + d.not_run;
    else if (d.budget_exhausted)
      note = "budget exhausted: ran " + std::to_string(d.cases) + " of " + std::to_string(d.planned);
    else if (d.planned == 0)
      note = "no case selected";
    rows.push_back({d.name, std::to_string(d.cases), std::to_string(d.passed), std::to_string(d.failed),
                    std::to_string(d.forward_only), format_ratio(d.worst_ratio), std::to_string(d.families.size()), format_seconds(d.seconds), note});
  }
  return rows;
}

std::string summary_table(const RunReport& r) { return text_table(summary_header(), summary_rows(r)); }

std::string failure_list(const RunReport& r) {
  std::ostringstream os;
  for (const auto& d : r.divergences) {
    for (const auto& f : d.failures) {
      os << "FAIL " << d.name << " case " << f.k << " (family " << f.family << ", " << f.dtype << ", seed " << f.seed
         << ", size " << f.size << "): " << f.summary << "\n";
      if (!f.case_file.empty()) os << "  case file:  " << f.case_file << "\n";
      if (!f.repro.empty()) os << "  repro:      " << f.repro << "\n";
      os << "  regenerate: " << f.regenerate << "\n";
    }
  }
  return os.str();
}

}  // namespace divcheck::report

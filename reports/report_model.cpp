// Aggregation of a divergence's case list into its totals and per (family, dtype) rows.
#include "reports/report_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace divcheck::report {

std::int64_t RunReport::total_failed() const {
  std::int64_t n = 0;
  for (const auto& d : divergences) n += d.failed;
  return n;
}

namespace {

// max that lets NaN win (a NaN ratio must not hide behind a finite one).
double worse(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  return std::max(a, b);
}

}  // namespace

void summarize(DivergenceRecord& d) {
  d.cases = static_cast<std::int64_t>(d.case_list.size());
  d.passed = 0;
  d.failed = 0;
  d.forward_only = 0;
  d.worst_ratio = 0.0;
  d.seconds = 0.0;
  d.families.clear();
  d.by_family_dtype.clear();
  for (const auto& c : d.case_list) {
    if (c.passed) ++d.passed; else ++d.failed;
    if (c.gradients.empty() && c.dtype != "?") ++d.forward_only;
    d.worst_ratio = worse(d.worst_ratio, c.worst_ratio);
    d.seconds += c.seconds;
    if (std::find(d.families.begin(), d.families.end(), c.family) == d.families.end()) d.families.push_back(c.family);
    auto it = std::find_if(d.by_family_dtype.begin(), d.by_family_dtype.end(),
                           [&](const FamilyDtypeStats& s) { return s.family == c.family && s.dtype == c.dtype; });
    if (it == d.by_family_dtype.end()) {
      d.by_family_dtype.push_back({c.family, c.dtype, 0, 0, 0.0, 0.0});
      it = d.by_family_dtype.end() - 1;
    }
    ++it->cases;
    if (!c.passed) ++it->failed;
    it->worst_ratio = worse(it->worst_ratio, c.worst_ratio);
    it->seconds += c.seconds;
  }
}

std::string format_ratio(double ratio) {
  if (std::isnan(ratio)) return "nan";
  if (std::isinf(ratio)) return ratio > 0 ? "inf" : "-inf";
  char buf[32];
  if (ratio != 0.0 && (ratio < 1e-3 || ratio >= 1e4))
    std::snprintf(buf, sizeof buf, "%.2e", ratio);
  else
    std::snprintf(buf, sizeof buf, "%.3g", ratio);
  return buf;
}

}  // namespace divcheck::report

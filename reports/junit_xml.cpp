// JUnit XML writer (the dialect Jenkins, GitLab and GitHub test reporters read).
#include "reports/junit_xml.hpp"

#include <cstdio>
#include <sstream>

#include "reports/text_util.hpp"

namespace divcheck::report {

std::string xml_escape(const std::string& raw) {
  const std::string s = sanitize_utf8(raw);
  std::string out;
  out.reserve(s.size());
  for (unsigned char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      case '\r': out += "&#13;"; break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02X", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out;
}

namespace {

std::string seconds_attr(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

std::string failure_text(const DivergenceRecord& d, const FamilyDtypeStats& s) {
  std::ostringstream os;
  for (const auto& f : d.failures) {
    if (f.family != s.family || f.dtype != s.dtype) continue;
    os << "case k=" << f.k << " seed=" << f.seed << " size=" << f.size << ": " << f.summary << "\n";
    if (!f.case_file.empty()) os << "  case file:  " << f.case_file << "\n";
    if (!f.repro.empty()) os << "  repro:      " << f.repro << "\n";
    os << "  regenerate: " << f.regenerate << "\n";
  }
  return os.str();
}

// Skipped test cases a divergence adds besides its family x dtype cases.
std::int64_t extra_skips(const DivergenceRecord& d) { return (d.budget_exhausted ? 1 : 0) + (d.not_run.empty() ? 0 : 1); }

}  // namespace

std::string to_junit_xml(const RunReport& r) {
  std::int64_t tests = 0, failures = 0, skipped = 0;
  for (const auto& d : r.divergences) {
    tests += static_cast<std::int64_t>(d.by_family_dtype.size()) + extra_skips(d);
    skipped += extra_skips(d);
    for (const auto& s : d.by_family_dtype) failures += s.failed > 0 ? 1 : 0;
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"divcheck\" tests=\"" << tests << "\" failures=\"" << failures << "\" skipped=\""
     << skipped << "\" errors=\"0\" time=\"" << seconds_attr(r.wall_seconds) << "\">\n";
  for (const auto& d : r.divergences) {
    std::int64_t suite_failures = 0;
    for (const auto& s : d.by_family_dtype) suite_failures += s.failed > 0 ? 1 : 0;
    const std::string suite = xml_escape(d.name);
    os << "  <testsuite name=\"" << suite << "\" tests=\""
       << d.by_family_dtype.size() + extra_skips(d) << "\" failures=\"" << suite_failures
       << "\" skipped=\"" << extra_skips(d) << "\" errors=\"0\" time=\"" << seconds_attr(d.seconds)
       << "\" timestamp=\"" << xml_escape(r.started_at) << "\" hostname=\"" << xml_escape(r.environment.hostname)
       << "\">\n";
    os << "    <properties>\n";
    auto prop = [&](const std::string& name, const std::string& value) {
      os << "      <property name=\"" << xml_escape(name) << "\" value=\"" << xml_escape(value) << "\"/>\n";
    };
    prop("backend", r.backend);
    prop("seed", std::to_string(r.seed));
    prop("shard", std::to_string(r.shard_index) + "/" + std::to_string(r.shard_count));
    prop("cases_run", std::to_string(d.cases));
    prop("cases_planned", std::to_string(d.planned));
    prop("worst_ratio", format_ratio(d.worst_ratio));
    prop("git_sha", r.environment.git_sha);
    os << "    </properties>\n";
    for (const auto& s : d.by_family_dtype) {
      os << "    <testcase classname=\"" << suite << "\" name=\"" << xml_escape(s.family + "/" + s.dtype)
         << "\" time=\"" << seconds_attr(s.seconds) << "\"";
      if (s.failed == 0) {
        os << "/>\n";
        continue;
      }
      os << ">\n";
      const std::string message = std::to_string(s.failed) + " of " + std::to_string(s.cases) +
                                  " cases failed; worst error " + format_ratio(s.worst_ratio) + " of bound";
      os << "      <failure type=\"divergence mismatch\" message=\"" << xml_escape(message) << "\">"
         << xml_escape(failure_text(d, s)) << "</failure>\n";
      os << "    </testcase>\n";
    }
    if (!d.not_run.empty()) {
      os << "    <testcase classname=\"" << suite << "\" name=\"not_run\" time=\"0.000\">\n";
      os << "      <skipped message=\"" << xml_escape("not run: " + d.not_run) << "\"/>\n";
      os << "    </testcase>\n";
    }
    if (d.budget_exhausted) {
      os << "    <testcase classname=\"" << suite << "\" name=\"time_budget\" time=\"0.000\">\n";
      os << "      <skipped message=\""
         << xml_escape("time budget exhausted: ran " + std::to_string(d.cases) + " of " + std::to_string(d.planned) +
                       " cases")
         << "\"/>\n";
      os << "    </testcase>\n";
    }
    os << "  </testsuite>\n";
  }
  os << "</testsuites>\n";
  return os.str();
}

}  // namespace divcheck::report

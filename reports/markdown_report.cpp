// Markdown rendering of a RunReport.
#include "reports/markdown_report.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "reports/summary_table.hpp"
#include "reports/text_util.hpp"

namespace divcheck::report {

namespace {

std::string cell(const std::string& raw) {
  std::string out;
  for (char ch : sanitize_utf8(raw)) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n' || ch == '\r') out += ' ';
    else out += ch;
  }
  return out;
}

std::string value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string coords(const std::vector<std::int64_t>& c) {
  std::string s = "(";
  for (std::size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "") + std::to_string(c[i]);
  return s + ")";
}

void table(std::ostringstream& os, const std::vector<std::string>& header,
           const std::vector<std::vector<std::string>>& rows) {
  os << "|";
  for (const auto& h : header) os << " " << cell(h) << " |";
  os << "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) os << " --- |";
  os << "\n";
  for (const auto& r : rows) {
    os << "|";
    for (const auto& c : r) os << " " << cell(c) << " |";
    os << "\n";
  }
}

}  // namespace

std::string to_markdown(const RunReport& r) {
  std::ostringstream os;
  os << "# divcheck check: " << (r.passed() ? "PASS" : "FAIL") << "\n\n";
  os << "- command: `" << sanitize_utf8(r.command_line) << "`\n";
  os << "- backend: " << cell(r.backend) << ", seed " << r.seed << ", shard " << r.shard_index << "/"
     << r.shard_count << ", " << r.cases_per_divergence << " cases per divergence, " << r.jobs << " jobs\n";
  if (r.only_case) os << "- only case k = " << *r.only_case << "\n";
  if (!r.families_filter.empty()) {
    os << "- families:";
    for (const auto& f : r.families_filter) os << " " << cell(f);
    os << "\n";
  }
  if (r.time_budget)
    os << "- time budget: " << *r.time_budget << " s" << (r.budget_exhausted ? " (exhausted)" : " (not reached)")
       << "\n";
  os << "- started " << r.started_at << ", wall time " << format_seconds(r.wall_seconds) << "\n";
  const auto& e = r.environment;
  os << "- environment: " << cell(e.hostname) << ", " << cell(e.cpu_model) << ", " << cell(e.compiler) << ", git "
     << cell(e.git_sha) << "\n";
  if (e.gpu)
    os << "- GPU: " << cell(e.gpu->name) << ", driver " << cell(e.gpu->driver_version) << ", CUDA runtime "
       << cell(e.gpu->cuda_runtime) << "\n";
  else
    os << "- GPU: none (" << cell(e.gpu_unavailable_reason) << ")\n";
  os << "\nErrors are in units of their bound (docs/tolerances.md): a case passes when every output is within "
        "1.0 of its bound and the exact-zero, NaN and inf rules hold.\n\n";
  table(os, summary_header(), summary_rows(r));

  if (r.passed()) return os.str();
  os << "\n## Failures\n";
  for (const auto& d : r.divergences) {
    for (const auto& f : d.failures) {
      os << "\n### " << cell(d.name) << " case " << f.k << " (" << cell(f.family) << ", " << cell(f.dtype) << ")\n\n";
      os << cell(f.summary) << "\n\n";
      os << "- seed " << f.seed << ", size " << f.size;
      if (f.shrunk) os << "; shrunk in " << f.shrink_steps << " steps (" << cell(f.shrink_stop) << ")";
      os << "\n";
      if (!f.case_file.empty()) os << "- case file: `" << sanitize_utf8(f.case_file) << "`\n";
      os << "\n```sh\n";
      if (!f.repro.empty()) os << sanitize_utf8(f.repro) << "\n";
      os << sanitize_utf8(f.regenerate) << "\n```\n";
      for (const auto& t : f.tensors) {
        if (t.wrong == 0) continue;
        os << "\n**" << cell(t.name) << "**: " << t.wrong << " of " << t.total << " elements wrong, worst "
           << format_ratio(t.worst_ratio) << " of bound\n\n";
        std::vector<std::vector<std::string>> rows;
        for (const auto& m : t.first)
          rows.push_back({coords(m.coords), value(m.got), value(m.expected), value(m.bound), m.kind});
        table(os, {"index", "got", "reference", "bound", "kind"}, rows);
      }
    }
  }
  return os.str();
}

}  // namespace divcheck::report

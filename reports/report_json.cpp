// RunReport -> JSON, field for field as docs/report-schema.md lists them.
#include "reports/report_json.hpp"

#include <cmath>

#include "core/version.hpp"

namespace divcheck::report {

using json = nlohmann::ordered_json;

json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

namespace {

json to_json(const MismatchRecord& m) {
  return json{{"index", m.index}, {"coords", m.coords}, {"got", json_number(m.got)},
              {"expected", json_number(m.expected)}, {"bound", json_number(m.bound)}, {"kind", m.kind}};
}

json to_json(const TensorRecord& t) {
  json first = json::array();
  for (const auto& m : t.first) first.push_back(to_json(m));
  return json{{"name", t.name}, {"wrong", t.wrong}, {"total", t.total},
              {"worst_ratio", json_number(t.worst_ratio)}, {"first", first}};
}

json to_json(const FailureRecord& f) {
  json tensors = json::array();
  for (const auto& t : f.tensors) tensors.push_back(to_json(t));
  return json{{"k", f.k},
              {"family", f.family},
              {"seed", f.seed},
              {"size", f.size},
              {"dtype", f.dtype},
              {"case_file", f.case_file.empty() ? json(nullptr) : json(f.case_file)},
              {"repro", f.repro},
              {"regenerate", f.regenerate},
              {"summary", f.summary},
              {"error", f.error.empty() ? json(nullptr) : json(f.error)},
              {"shrink", json{{"attempted", f.shrunk},
                              {"steps", f.shrink_steps},
                              {"attempts", f.shrink_attempts},
                              {"stopped_by", f.shrink_stop}}},
              {"tensors", tensors}};
}

json to_json(const CaseRecord& c) {
  return json{{"k", c.k},           {"family", c.family}, {"seed", c.seed},
              {"size", c.size},     {"dtype", c.dtype},   {"gradients", c.gradients}, {"passed", c.passed},
              {"worst_ratio", json_number(c.worst_ratio)}, {"seconds", c.seconds}};
}

json to_json(const DivergenceRecord& d) {
  json by = json::array();
  for (const auto& s : d.by_family_dtype)
    by.push_back(json{{"family", s.family}, {"dtype", s.dtype}, {"cases", s.cases}, {"failed", s.failed},
                      {"worst_ratio", json_number(s.worst_ratio)}, {"seconds", s.seconds}});
  json failures = json::array();
  for (const auto& f : d.failures) failures.push_back(to_json(f));
  json cases = json::array();
  for (const auto& c : d.case_list) cases.push_back(to_json(c));
  return json{{"name", d.name},
              {"planned", d.planned},
              {"cases", d.cases},
              {"passed", d.passed},
              {"failed", d.failed},
              {"forward_only", d.forward_only},
              {"worst_ratio", json_number(d.worst_ratio)},
              {"seconds", d.seconds},
              {"budget_exhausted", d.budget_exhausted},
              {"not_run", d.not_run.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.not_run)},
              {"families", d.families},
              {"by_family_dtype", by},
              {"failures", failures},
              {"case_list", cases}};
}

json to_json(const Environment& e) {
  json gpu = nullptr;
  if (e.gpu)
    gpu = json{{"name", e.gpu->name}, {"driver_version", e.gpu->driver_version},
               {"cuda_driver_api", e.gpu->cuda_driver_api}, {"cuda_runtime", e.gpu->cuda_runtime}};
  return json{{"hostname", e.hostname},
              {"cpu_model", e.cpu_model},
              {"compiler", e.compiler},
              {"git_sha", e.git_sha},
              {"gpu", gpu},
              {"gpu_unavailable_reason", e.gpu ? json(nullptr) : json(e.gpu_unavailable_reason)}};
}

}  // namespace

json to_json(const RunReport& r) {
  json divs = json::array();
  for (const auto& d : r.divergences) divs.push_back(to_json(d));
  return json{{"schema_version", kReportSchemaVersion},
              {"tool_version", r.tool_version},
              {"started_at", r.started_at},
              {"wall_seconds", r.wall_seconds},
              {"command_line", r.command_line},
              {"backend", r.backend},
              {"seed", r.seed},
              {"shard", json{{"index", r.shard_index}, {"count", r.shard_count}}},
              {"cases_per_divergence", r.cases_per_divergence},
              {"only_case", r.only_case ? json(*r.only_case) : json(nullptr)},
              {"families_filter", r.families_filter},
              {"time_budget", r.time_budget ? json(*r.time_budget) : json(nullptr)},
              {"budget_exhausted", r.budget_exhausted},
              {"jobs", r.jobs},
              {"out_dir", r.out_dir},
              {"passed", r.passed()},
              {"total_failed", r.total_failed()},
              {"environment", to_json(r.environment)},
              {"divergences", divs}};
}

}  // namespace divcheck::report

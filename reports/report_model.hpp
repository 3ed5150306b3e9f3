// The report model of one `divcheck check` run: what ran, what failed, where the reproducers
// are, and the machine it ran on. Plain data, filled by the gate and rendered by the writers
// (report_json, junit_xml, markdown_report, text_table). docs/report-schema.md documents the
// JSON form field by field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace divcheck::report {

// One wrong element of an output, side by side with the reference.
struct MismatchRecord {
  std::int64_t index = 0;             // flat row-major index
  std::vector<std::int64_t> coords;   // the index unravelled over the tensor's shape, e.g. (b, t, v)
  double got = 0.0;
  double expected = 0.0;
  double bound = 0.0;
  std::string kind;                   // out_of_bound, not_exact_zero, nan_mismatch, ...
};

// The verdict on one output tensor ("loss" or a gradient's role name).
struct TensorRecord {
  std::string name;
  std::int64_t wrong = 0;
  std::int64_t total = 0;
  double worst_ratio = 0.0;  // error in units of the bound; may be +inf
  std::vector<MismatchRecord> first;
};

// One case of the stream that ran (pass or fail).
struct CaseRecord {
  std::int64_t k = 0;        // index in the divergence's case stream
  std::string family;
  std::uint64_t seed = 0;    // generator seed of this case
  int size = 0;              // RapidCheck size it was drawn at
  std::string dtype;         // dtype of the floating inputs ("f32", "bf16", "f16"); "?" if not drawn
  std::vector<std::string> gradients;  // the gradients the case asked for; empty: forward only
  bool passed = false;
  double worst_ratio = 0.0;  // error in units of the bound; may be +inf
  double seconds = 0.0;      // not part of the deterministic content
};

// A failing case, shrunk and saved.
struct FailureRecord {
  std::int64_t k = 0;
  std::string family;
  std::uint64_t seed = 0;
  int size = 0;
  std::string dtype;
  std::string case_file;    // path of the saved (shrunk) case; "" when it could not be saved
  std::string repro;        // one-line replay command
  std::string regenerate;   // command that regenerates the original (unshrunk) case
  std::string summary;      // one line: the verdict summary or the exception text
  std::string error;        // exception text when the backend/reference/generator threw, else ""
  bool shrunk = false;      // whether shrinking was attempted
  int shrink_steps = 0;     // successful shrink steps taken
  int shrink_attempts = 0;  // candidates evaluated
  std::string shrink_stop;  // why shrinking stopped: "minimal", "step limit", "time limit", "not attempted"
  std::vector<TensorRecord> tensors;  // the verdict on the saved case
};

// Aggregate per (family, dtype) for JUnit test cases and the report.
struct FamilyDtypeStats {
  std::string family;
  std::string dtype;
  std::int64_t cases = 0;
  std::int64_t failed = 0;
  double worst_ratio = 0.0;
  double seconds = 0.0;
};

struct DivergenceRecord {
  std::string name;
  std::int64_t planned = 0;   // cases this shard owns after the family filter
  std::int64_t cases = 0;     // cases that ran
  std::int64_t passed = 0;
  std::int64_t failed = 0;
  std::int64_t forward_only = 0;  // cases that ran asking for no gradient (loss only)
  double worst_ratio = 0.0;
  double seconds = 0.0;       // sum of per-case times (wall time of its cases, all workers)
  bool budget_exhausted = false;  // cases < planned because the time budget ran out
  std::string not_run;            // non-empty: the row was not run, and why (e.g. unsupported by the backend)
  std::vector<std::string> families;  // families of the cases that ran, in first-seen order
  std::vector<FamilyDtypeStats> by_family_dtype;
  std::vector<FailureRecord> failures;  // in case-index order
  std::vector<CaseRecord> case_list;    // in case-index order
};

struct GpuInfo {
  std::string name;
  std::string driver_version;        // NVIDIA kernel driver ("580.65.06") or "unknown"
  std::string cuda_driver_api;       // cudaDriverGetVersion, e.g. "13.0"
  std::string cuda_runtime;          // cudaRuntimeGetVersion, e.g. "13.0"
};

struct Environment {
  std::string hostname;
  std::string cpu_model;
  std::string compiler;
  std::string git_sha;               // "<sha>", "<sha>-dirty" or "unknown"
  std::optional<GpuInfo> gpu;
  std::string gpu_unavailable_reason;  // set when gpu is empty
};

struct RunReport {
  std::string tool_version;
  std::string started_at;            // ISO 8601 UTC
  double wall_seconds = 0.0;
  std::string command_line;          // shell-quoted
  std::string backend;
  std::uint64_t seed = 0;
  int shard_index = 0;
  int shard_count = 1;
  std::int64_t cases_per_divergence = 0;
  std::optional<std::int64_t> only_case;
  std::vector<std::string> families_filter;  // empty = all families
  std::optional<double> time_budget;         // seconds
  bool budget_exhausted = false;
  int jobs = 1;
  std::string out_dir;
  Environment environment;
  std::vector<DivergenceRecord> divergences;

  std::int64_t total_failed() const;
  bool passed() const { return total_failed() == 0; }
};

// Fills a divergence's totals (cases, passed, failed, worst_ratio, seconds, families,
// by_family_dtype) from its case_list. The case list is the single source of truth.
void summarize(DivergenceRecord& d);

// "inf", "nan" or a short decimal ("0.031") for tables.
std::string format_ratio(double ratio);

}  // namespace divcheck::report

// The nightly gate (`divcheck check`) as a library: draw the case stream, run every case on a
// backend, judge it against the reference, shrink and save the failures, write report.json,
// junit.xml and report.md, print the table. The backend is a parameter so that tests can run
// the gate on deliberately broken backends.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "cli/case_stream.hpp"
#include "cli/shrink.hpp"
#include "core/registry.hpp"
#include "kernels/backend.hpp"
#include "reports/report_model.hpp"

namespace divcheck::gate {

struct GateOptions {
  std::vector<DivergenceId> divergences;   // run in registry order; empty = every row
  std::int64_t cases = 1000;               // per divergence (the stream indices 0..cases-1)
  std::optional<std::int64_t> only_case;   // run exactly case k of each divergence instead
  std::uint64_t seed = kDefaultSeed;
  std::optional<double> time_budget;       // seconds; no new case starts after it
  int shard_index = 0;
  int shard_count = 1;
  std::string out_dir = "divcheck-out";
  int jobs = 1;                            // worker threads; results do not depend on it
  std::vector<std::string> families;       // empty = every family
  bool verbose = false;                    // one stderr line per case
  int shrink_cases = 3;                    // failures shrunk per divergence (the first by index)
  ShrinkLimits shrink;
  // For the commands the report prints: the program path and the --backend value to replay with.
  std::string program = "divcheck";
  std::string backend_arg = "cpu";
  std::vector<std::string> command_line;   // argv, for report.json
};

struct GateRun {
  int exit_code = 0;  // 0 all passed, 1 some case failed
  report::RunReport report;
};

// Runs the gate. `out` gets the header, the table and the failure list; `err` the progress
// lines. With jobs > 1, backend.run() is called from several threads at once (it is const;
// every backend must allow that); RapidCheck generation is serialized (rapidcheck_lock.hpp). Writes DIR/report.json, DIR/junit.xml, DIR/report.md and DIR/failures/*.safetensors.
// Throws (InvalidArgument, std::runtime_error for I/O) only for problems outside any case.
GateRun run_gate(const GateOptions& options, const Backend& backend, std::ostream& out, std::ostream& err);

// The file name of a saved failure: "<divergence>-<family>-<k>.safetensors".
std::string failure_file_name(std::string_view divergence, std::string_view family, std::int64_t k);

// The default worker count: min(2, hardware threads), at least 1.
int default_jobs();

}  // namespace divcheck::gate

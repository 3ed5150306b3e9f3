// Subcommand dispatch, `divcheck --help` and `divcheck --version`.
#include <ostream>

#include "cli/commands.hpp"
#include "core/version.hpp"

#ifndef DIVCHECK_GIT_SHA
#define DIVCHECK_GIT_SHA "unknown"
#endif

namespace divcheck::cli {

namespace {

constexpr const char* kHelp = R"(usage: divcheck COMMAND [options]     (divcheck COMMAND --help for details)

Verifies divergence-loss kernels (KL, Jefferys, JS, Hellinger, TV, cross-entropy, temperature-
scaled and fused-linear KL, distance correlation, tvd_prob) against high-precision references.

commands:
  check            the nightly gate: run the case stream on a backend, write report.json,
                   junit.xml, report.md and shrunk failing cases (exit 0 pass, 1 fail, 2 usage)
  repro FILE       replay a saved case file and print a bug report (exit 0 pass, 1 fail)
  verify-results CASE RESULTS
                   judge an outside implementation's results file for a case
  export-case      write one generated case to a file
  list             the registry: divergences, roles, parameters, properties, families
  --help           this text
  --version        version, git revision, report schema and case-file versions
)";

void print_version(std::ostream& out) {
  out << "divcheck " << kVersion << " (git " << DIVCHECK_GIT_SHA << "; report schema " << kReportSchemaVersion
      << "; case file format " << kCaseFileFormatVersion << "; "
#ifdef DIVCHECK_WITH_CUDART
      << "built with the CUDA runtime"
#else
      << "built without CUDA"
#endif
      << ")\n";
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const CommandContext& ctx) {
  if (args.empty()) {
    err << kHelp;
    return kExitUsage;
  }
  const std::string& cmd = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    out << kHelp;
    return kExitPass;
  }
  if (cmd == "--version") {
    print_version(out);
    return kExitPass;
  }
  if (cmd == "check") return check_command(rest, out, err, ctx);
  if (cmd == "repro") return repro_command(rest, out, err, ctx);
  if (cmd == "verify-results") return verify_results_command(rest, out, err, ctx);
  if (cmd == "export-case") return export_case_command(rest, out, err, ctx);
  if (cmd == "list") return list_command(rest, out, err, ctx);
  err << "divcheck: error: command = " << cmd
      << ": unknown command; valid: check, repro, verify-results, export-case, list, --help, --version\n";
  return kExitUsage;
}

}  // namespace divcheck::cli

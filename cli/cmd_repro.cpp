// `divcheck repro` (replay a saved case on a backend) and `divcheck verify-results` (judge an
// external implementation's results file for a case). Both print the same bug report.
#include <algorithm>
#include <ostream>

#include "cli/arg_parse.hpp"
#include "cli/bug_report.hpp"
#include "cli/case_check.hpp"
#include "cli/command_support.hpp"
#include "cli/commands.hpp"
#include "core/case_file.hpp"
#include "core/errors.hpp"

namespace divcheck::cli {

namespace {

constexpr const char* kReproHelp = R"(usage: divcheck repro CASE_FILE [--backend cpu|cuda] [--precision float128|mpfr50]

Replays a saved case (a .safetensors case file, e.g. from OUT/failures/) on a backend, checks it
against the reference and prints a bug report: divergence, parameters, shapes and dtypes,
provenance, the loss got vs reference, and per gradient the wrong elements side by side
(index (b, t, v), got, reference, bound, kind).
exit status: 0 pass, 1 fail, 2 unreadable/malformed case file or usage error.
)";

constexpr const char* kVerifyHelp = R"(usage: divcheck verify-results CASE_FILE RESULTS_FILE [--precision float128|mpfr50]

Judges outputs computed outside divcheck (a PyTorch function, a Triton kernel) for a case
exported with `divcheck export-case`. RESULTS_FILE is a safetensors file with tensor "loss" and
one tensor "grad.<role>" per wanted gradient (core/case_file.hpp). Prints the same report as
`divcheck repro`.
exit status: 0 pass, 1 fail, 2 unreadable/malformed file or usage error.
)";

bool wants_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
}

std::string quoted_list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

int repro_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                  const CommandContext& ctx) {
  if (wants_help(args)) {
    out << kReproHelp;
    return kExitPass;
  }
  return guarded("divcheck repro", err, [&]() -> int {
    const ParsedArgs a = parse_args("divcheck repro", args, {{"--backend"}, {"--precision"}});
    if (a.positionals.size() != 1)
      throw InvalidArgument("CASE_FILE", a.positionals.empty() ? "(missing)" : quoted_list(a.positionals),
                            "divcheck repro takes exactly one case file");
    const Precision precision = parse_precision("--precision", a.value("--precision"));
    SelectedBackend b = select_backend(a.value("--backend"), ctx);
    const Case c = read_case(a.positionals[0]);
    validate_case(c);
    out << "divcheck repro " << a.positionals[0] << "\n";
    const gate::CaseCheck check = gate::check_case(*b.backend, c, precision);
    gate::print_bug_report(out, c, check, "backend " + std::string(b.backend->name()), precision);
    return check.pass() ? kExitPass : kExitFail;
  });
}

int verify_results_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                           const CommandContext&) {
  if (wants_help(args)) {
    out << kVerifyHelp;
    return kExitPass;
  }
  return guarded("divcheck verify-results", err, [&]() -> int {
    const ParsedArgs a = parse_args("divcheck verify-results", args, {{"--precision"}});
    if (a.positionals.size() != 2)
      throw InvalidArgument("arguments", a.positionals.empty() ? "(missing)" : quoted_list(a.positionals),
                            "divcheck verify-results takes CASE_FILE RESULTS_FILE");
    const Precision precision = parse_precision("--precision", a.value("--precision"));
    const Case c = read_case(a.positionals[0]);
    validate_case(c);
    Outputs o = read_outputs(a.positionals[1], c);
    out << "divcheck verify-results " << a.positionals[0] << " " << a.positionals[1] << "\n";
    const gate::CaseCheck check = gate::check_outputs(c, std::move(o), precision);
    gate::print_bug_report(out, c, check, "results file " + a.positionals[1], precision);
    return check.pass() ? kExitPass : kExitFail;
  });
}

}  // namespace divcheck::cli

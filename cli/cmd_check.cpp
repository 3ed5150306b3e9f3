// `divcheck check`: option parsing and validation for the gate; the gate itself is gate.cpp.
#include <algorithm>
#include <filesystem>
#include <ostream>
#include <tuple>

#include "cli/arg_parse.hpp"
#include "cli/command_support.hpp"
#include "cli/commands.hpp"
#include "cli/gate.hpp"
#include "core/errors.hpp"

namespace divcheck::cli {

namespace {

constexpr const char* kCheckHelp = R"(usage: divcheck check [options]

The nightly correctness gate: runs the case stream of every selected divergence on a backend,
judges each case against the high-precision reference, shrinks and saves failing cases, and
writes OUT/report.json, OUT/junit.xml, OUT/report.md and OUT/failures/*.safetensors.

options:
  --backend cpu|cuda      backend to verify (default: cuda when a CUDA device is visible, else cpu)
  --divergence NAME       divergence to run; repeatable or a comma list (default: all 12)
  --cases N               cases per divergence, N >= 1 (default 1000)
  --seed S                run seed, unsigned 64-bit decimal (default 20261130)
  --time-budget SECONDS   start no new case after SECONDS; reported as "budget exhausted",
                          not a failure (default: none). Cases start k-major (case 0 of
                          every divergence, then case 1, ...), so the budget cuts every
                          divergence at about the same index. Shrinking failures afterwards
                          is bounded by --shrink-seconds per case, not by the budget
  --shard I/N             run only the cases k with k mod N == I (default 0/1)
  --only-case K           run only case K of each selected divergence (replays a nightly case;
                          not with --cases or --shard)
  --families LIST         only cases of these families (comma list, repeatable)
  --out DIR               output folder (default ./divcheck-out)
  --jobs J                worker threads (default min(2, hardware threads)); results do not
                          depend on J
  --shrink-cases N        failing cases shrunk per divergence, the first by index (default 3);
                          the others are saved as drawn
  --shrink-attempts N     candidate cases tried in each of a shrink's two walks: the generator's
                          shrinks, then whole sequences, positions and columns removed
                          (default 1000)
  --shrink-seconds S      wall-time limit of one case's shrink, both walks (default 60)
  --verbose               one line per case on stderr
  --help                  this text

Case k of divergence d: family = families(d)[k mod #families], seed = splitmix64 mix of
(run seed, d, k), size = (7 k) mod 101 (see cli/case_stream.hpp).
exit status: 0 every case passed, 1 some case failed, 2 usage error or backend unavailable.
)";

const std::vector<OptionSpec> kCheckOptions = {
    {"--backend"},       {"--divergence", true, true}, {"--cases"},          {"--seed"},
    {"--time-budget"},   {"--shard"},                  {"--only-case"},      {"--families", true, true},
    {"--out"},           {"--jobs"},                   {"--shrink-cases"},   {"--shrink-attempts"},
    {"--shrink-seconds"}, {"--verbose", false},
};

bool wants_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
}

}  // namespace

int check_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                  const CommandContext& ctx) {
  if (wants_help(args)) {
    out << kCheckHelp;
    return kExitPass;
  }
  return guarded("divcheck check", err, [&]() -> int {
    const ParsedArgs a = parse_args("divcheck check", args, kCheckOptions);
    if (!a.positionals.empty())
      throw InvalidArgument("argument", a.positionals.front(), "divcheck check takes no positional arguments");

    gate::GateOptions o;
    o.program = ctx.program;
    o.command_line.push_back(ctx.program);
    o.command_line.push_back("check");
    o.command_line.insert(o.command_line.end(), args.begin(), args.end());

    o.divergences = parse_divergences("--divergence", split_list("--divergence", a.values("--divergence")));
    if (auto v = a.value("--cases")) o.cases = parse_int("--cases", *v, 1, 100'000'000);
    if (auto v = a.value("--seed")) o.seed = parse_u64("--seed", *v);
    if (auto v = a.value("--time-budget")) o.time_budget = parse_positive_seconds("--time-budget", *v);
    if (auto v = a.value("--shard")) std::tie(o.shard_index, o.shard_count) = parse_shard("--shard", *v);
    if (auto v = a.value("--only-case")) {
      o.only_case = parse_int("--only-case", *v, 0, std::int64_t{1} << 40);
      if (a.has("--cases")) throw InvalidArgument("--only-case", *v, "cannot be combined with --cases");
      if (a.has("--shard")) throw InvalidArgument("--only-case", *v, "cannot be combined with --shard");
    }
    if (auto v = a.value("--out")) {
      if (v->empty()) throw InvalidArgument("--out", "(empty)", "must name a folder");
      o.out_dir = *v;
    }
    o.jobs = gate::default_jobs();
    if (auto v = a.value("--jobs")) o.jobs = static_cast<int>(parse_int("--jobs", *v, 1, 256));
    if (auto v = a.value("--shrink-cases")) o.shrink_cases = static_cast<int>(parse_int("--shrink-cases", *v, 0, 1'000'000));
    if (auto v = a.value("--shrink-attempts"))
      o.shrink.max_attempts = static_cast<int>(parse_int("--shrink-attempts", *v, 0, 100'000'000));
    if (auto v = a.value("--shrink-seconds")) o.shrink.max_seconds = parse_positive_seconds("--shrink-seconds", *v);
    o.verbose = a.has("--verbose");

    o.families = split_list("--families", a.values("--families"));
    std::vector<DivergenceId> selected = o.divergences;
    if (selected.empty())
      for (const auto& row : registry()) selected.push_back(row.id);
    check_family_names("--families", o.families, selected);

    SelectedBackend b = select_backend(a.value("--backend"), ctx);
    o.backend_arg = b.label;
    {  // fail now, not after the cases ran, when the reports cannot be written
      std::error_code ec;
      std::filesystem::create_directories(o.out_dir, ec);
      if (ec || !std::filesystem::is_directory(o.out_dir))
        throw InvalidArgument("--out", o.out_dir, "cannot create the output folder" + (ec ? ": " + ec.message() : ""));
    }
    return gate::run_gate(o, *b.backend, out, err).exit_code;
  });
}

}  // namespace divcheck::cli

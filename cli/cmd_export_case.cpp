// `divcheck export-case`: draw one case from a generator family and write it as a case file,
// for outside implementations (verify-results) or to pin a reproducer under cases/.
#include <algorithm>
#include <ostream>

#include "cli/arg_parse.hpp"
#include "cli/bug_report.hpp"
#include "cli/case_stream.hpp"
#include "cli/command_support.hpp"
#include "cli/commands.hpp"
#include "core/case_file.hpp"
#include "core/errors.hpp"
#include "properties/generators.hpp"
#include "reports/atomic_file.hpp"

namespace divcheck::cli {

namespace {

constexpr const char* kExportHelp = R"(usage: divcheck export-case --divergence NAME --family FAMILY --out FILE
                           [--seed S] [--size N]

Draws one case (the same draw the gate makes for a given seed and size) and writes it as a
safetensors case file. --seed defaults to 20261130, --size (RapidCheck size, 0..100) to 30.
`divcheck list` shows each divergence's families.
)";

}  // namespace

int export_case_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const CommandContext&) {
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; })) {
    out << kExportHelp;
    return kExitPass;
  }
  return guarded("divcheck export-case", err, [&]() -> int {
    const ParsedArgs a =
        parse_args("divcheck export-case", args, {{"--divergence"}, {"--family"}, {"--seed"}, {"--size"}, {"--out"}});
    if (!a.positionals.empty())
      throw InvalidArgument("argument", a.positionals.front(), "divcheck export-case takes no positional arguments");
    for (const char* required : {"--divergence", "--family", "--out"})
      if (!a.has(required)) throw InvalidArgument(required, "(missing)", "is required");
    const DivergenceInfo& d = parse_divergence("--divergence", *a.value("--divergence"));
    const std::string family = *a.value("--family");
    check_family_names("--family", {family}, {d.id});
    const std::uint64_t seed = a.has("--seed") ? parse_u64("--seed", *a.value("--seed")) : gate::kDefaultSeed;
    const int size = a.has("--size") ? static_cast<int>(parse_int("--size", *a.value("--size"), 0, 100)) : 30;
    const std::string path = *a.value("--out");
    if (path.empty()) throw InvalidArgument("--out", "(empty)", "must name a file");

    const Case c = draw_case(d.id, family, seed, size).value();
    report::write_file_atomically(path, encode_case(c));
    out << "wrote " << path << "\n";
    gate::print_case_header(out, c);
    return kExitPass;
  });
}

}  // namespace divcheck::cli

// `divcheck list`: the registry (rows, roles, parameters, properties, tolerance constants) and
// each divergence's generator families.
#include <algorithm>
#include <cstdio>
#include <ostream>

#include "cli/arg_parse.hpp"
#include "cli/command_support.hpp"
#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "properties/generators.hpp"

namespace divcheck::cli {

namespace {

constexpr const char* kListHelp = R"(usage: divcheck list [--divergence NAME]...

Prints the registry: every divergence with its tensor roles, parameters, declared properties,
tolerance constants, and the case families the gate draws from.
)";

std::string_view kind_name(RoleKind k) {
  switch (k) {
    case RoleKind::logits: return "logits";
    case RoleKind::probabilities: return "probabilities";
    case RoleKind::position_mask: return "position_mask";
    case RoleKind::support_mask: return "support_mask";
    case RoleKind::labels: return "labels";
    case RoleKind::hidden: return "hidden";
    case RoleKind::weight: return "weight";
    case RoleKind::samples: return "samples";
  }
  return "?";
}

std::string dims(const RoleSpec& r) {
  std::string s = "(";
  bool first = true;
  for (auto d : r.dims) {
    if (d.empty()) continue;
    s += (first ? "" : ", ") + std::string(d);
    first = false;
  }
  return s + ")";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string properties(const RowProperties& p) {
  std::vector<std::string> v;
  if (p.nonnegative) v.push_back("nonnegative");
  if (p.upper_bound) v.push_back("bounded by " + number(*p.upper_bound));
  if (p.symmetric) v.push_back("symmetric");
  if (p.zero_on_identical) v.push_back("zero on identical inputs");
  if (p.shift_invariant) v.push_back("shift invariant");
  if (p.permutation_invariant) v.push_back("permutation invariant");
  if (p.mask_invariant) v.push_back("masked positions inert");
  if (p.grad_rows_sum_zero) v.push_back("gradient rows sum to 0");
  if (p.has_log_target) v.push_back("log_target paths agree");
  if (p.has_reduction_none) v.push_back("none averages to mean");
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

void print_row(std::ostream& out, const DivergenceInfo& d) {
  out << d.name << "\n  " << d.summary << "\n";
  out << "  roles:\n";
  for (const auto& r : d.roles) {
    out << "    " << r.name << "  " << kind_name(r.kind) << " " << dims(r) << (r.optional ? ", optional" : "")
        << (r.differentiable ? ", differentiable" : "")
        << (r.side == Side::p ? ", side p" : r.side == Side::q ? ", side q" : "") << "\n";
  }
  out << "  parameters: ";
  for (std::size_t i = 0; i < d.params.size(); ++i) out << (i ? ", " : "") << param_name(d.params[i]);
  if (d.params.empty()) out << "(none)";
  if (!d.reductions.empty()) {
    out << "; reduction in {";
    for (std::size_t i = 0; i < d.reductions.size(); ++i) out << (i ? ", " : "") << d.reductions[i];
    out << "}, default " << d.default_reduction;
  }
  out << "\n  properties: " << properties(d.props) << "\n";
  out << "  tolerance:  loss c = " << number(d.tolerance.loss_c) << ", gradient c = " << number(d.tolerance.grad_c)
      << " (units of u = 2^-24, plus the summation depth)\n";
  out << "  families:\n";
  for (const auto& f : families(d.id)) out << "    " << f.name << "  " << f.what << "\n";
}

}  // namespace

int list_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const CommandContext&) {
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; })) {
    out << kListHelp;
    return kExitPass;
  }
  return guarded("divcheck list", err, [&]() -> int {
    const ParsedArgs a = parse_args("divcheck list", args, {{"--divergence", true, true}});
    if (!a.positionals.empty())
      throw InvalidArgument("argument", a.positionals.front(), "divcheck list takes no positional arguments");
    std::vector<DivergenceId> ids = parse_divergences("--divergence", split_list("--divergence", a.values("--divergence")));
    bool first = true;
    for (const auto& row : registry()) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), row.id) == ids.end()) continue;
      if (!first) out << "\n";
      print_row(out, row);
      first = false;
    }
    return kExitPass;
  });
}

}  // namespace divcheck::cli

// Backend selection, name lookups and error mapping for the subcommands.
#include "cli/command_support.hpp"

#include <algorithm>
#include <ostream>

#include "core/errors.hpp"
#include "properties/generators.hpp"

namespace divcheck::cli {

SelectedBackend select_backend(const std::optional<std::string>& requested, const CommandContext& ctx) {
  SelectedBackend s;
  if (ctx.backend_override) {
    s.backend = ctx.backend_override;
    s.label = std::string(ctx.backend_override->name());
    return s;
  }
  if (requested && *requested != "cpu" && *requested != "cuda")
    throw InvalidArgument("--backend", *requested, "must be cpu or cuda");
  const bool want_cuda = requested ? *requested == "cuda" : cuda_device_present();
  if (want_cuda) {
    try {
      s.owned = make_cuda_backend();
    } catch (const Unavailable& e) {
      throw Unavailable(std::string(requested ? "--backend cuda" : "the default backend (cuda, a device is visible)") +
                        " is not available here: " + e.what());
    }
    s.label = "cuda";
  } else {
    s.owned = make_cpu_backend();
    s.label = "cpu";
  }
  s.backend = s.owned.get();
  return s;
}

std::string valid_divergence_names() {
  std::string s;
  for (const auto& d : registry()) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

const DivergenceInfo& parse_divergence(std::string_view option, const std::string& name) {
  const DivergenceInfo* d = find_divergence(name);
  if (!d) throw InvalidArgument(std::string(option), name, "unknown divergence; valid: " + valid_divergence_names());
  return *d;
}

std::vector<DivergenceId> parse_divergences(std::string_view option, const std::vector<std::string>& names) {
  std::vector<DivergenceId> ids;
  for (const auto& n : names) {
    const DivergenceId id = parse_divergence(option, n).id;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());  // registry order = DivergenceId order
  return ids;
}

std::string valid_family_names(const std::vector<DivergenceId>& ids) {
  std::vector<std::string> names;
  for (DivergenceId id : ids)
    for (const auto& f : families(id))
      if (std::find(names.begin(), names.end(), f.name) == names.end()) names.emplace_back(f.name);
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void check_family_names(std::string_view option, const std::vector<std::string>& names,
                        const std::vector<DivergenceId>& ids) {
  for (const auto& n : names) {
    bool found = false;
    for (DivergenceId id : ids)
      for (const auto& f : families(id)) found = found || f.name == n;
    if (!found)
      throw InvalidArgument(std::string(option), n,
                            "not a family of the selected divergences; valid: " + valid_family_names(ids));
  }
}

Precision parse_precision(std::string_view option, const std::optional<std::string>& text) {
  if (!text || *text == "float128") return Precision::float128;
  if (*text == "mpfr50") return Precision::mpfr50;
  throw InvalidArgument(std::string(option), *text, "must be float128 or mpfr50");
}

int guarded(std::string_view command, std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InvalidArgument& e) {
    err << command << ": error: " << e.what() << "\n";
  } catch (const FormatError& e) {
    err << command << ": error: malformed input: " << e.what() << "\n";
  } catch (const Unavailable& e) {
    err << command << ": error: " << e.what() << "\n";
  } catch (const std::exception& e) {
    err << command << ": error: " << e.what() << "\n";
  }
  return kExitUsage;
}

}  // namespace divcheck::cli

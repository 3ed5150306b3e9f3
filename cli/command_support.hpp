// Pieces the subcommands share: backend selection (--backend), divergence and family name
// lookup with "valid values" messages, --precision, and the error-to-exit-code wrapper.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/registry.hpp"
#include "reference/reference.hpp"

namespace divcheck::cli {

// The backend a command runs on. `requested` is --backend's value (nullopt: the default, cuda
// when a device is present, else cpu). Throws InvalidArgument for an unknown name and
// Unavailable (with the reason) when cuda cannot run here. `label` gets the --backend value that
// replays on the same backend ("cpu", "cuda", or the injected backend's name).
struct SelectedBackend {
  std::unique_ptr<Backend> owned;
  const Backend* backend = nullptr;
  std::string label;
};
SelectedBackend select_backend(const std::optional<std::string>& requested, const CommandContext& ctx);

// "--divergence" values (names, comma lists) -> ids in registry order, duplicates removed.
std::vector<DivergenceId> parse_divergences(std::string_view option, const std::vector<std::string>& names);
const DivergenceInfo& parse_divergence(std::string_view option, const std::string& name);
std::string valid_divergence_names();
// Every family name must belong to at least one of `ids`.
void check_family_names(std::string_view option, const std::vector<std::string>& names,
                        const std::vector<DivergenceId>& ids);
std::string valid_family_names(const std::vector<DivergenceId>& ids);

Precision parse_precision(std::string_view option, const std::optional<std::string>& text);

// Runs body(); maps InvalidArgument / FormatError / Unavailable / other exceptions to a message
// "<command>: error: ..." on err and exit code 2.
int guarded(std::string_view command, std::ostream& err, const std::function<int()>& body);

}  // namespace divcheck::cli

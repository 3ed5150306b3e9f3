// The divcheck subcommands: check, repro, verify-results, list, export-case (plus --help and
// --version). Each takes its arguments (without the program and command names), writes to
// out/err, and returns the exit code:
//   0  pass / success      1  a case failed      2  usage error, unreadable input, unavailable backend
// A CommandContext lets tests run a command in-process on an injected backend.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "kernels/backend.hpp"

namespace divcheck::cli {

inline constexpr int kExitPass = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitUsage = 2;

struct CommandContext {
  std::string program = "divcheck";          // how printed commands invoke divcheck
  const Backend* backend_override = nullptr;  // when set, used instead of --backend's choice
};

// The whole command line without argv[0]: dispatches to a subcommand.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const CommandContext& ctx);

int check_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                  const CommandContext& ctx);
int repro_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                  const CommandContext& ctx);
int verify_results_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                           const CommandContext& ctx);
int list_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 const CommandContext& ctx);
int export_case_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                        const CommandContext& ctx);

}  // namespace divcheck::cli

// The `divcheck` executable: argv -> run_cli (cli/run_cli.cpp).
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  divcheck::cli::CommandContext ctx;
  ctx.program = argc > 0 && argv[0] && *argv[0] ? argv[0] : "divcheck";
  try {
    return divcheck::cli::run_cli(args, std::cout, std::cerr, ctx);
  } catch (const std::exception& e) {  // commands map their own errors; this is the last net
    std::cerr << "divcheck: internal error: " << e.what() << "\n";
    return divcheck::cli::kExitUsage;
  }
}

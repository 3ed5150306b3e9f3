// Test support: run the built `divcheck` binary (path from the DIVCHECK_BINARY compile
// definition) with stdin from /dev/null, capturing stdout, stderr and the exit status; and
// scratch folders that clean up after themselves.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace divcheck::testing {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal number when killed by a signal
  std::string out;
  std::string err;
  std::string all() const { return out + err; }
};

// Runs argv (argv[0] is the executable path) and waits for it.
ProcessResult run_process(const std::vector<std::string>& argv);
// Runs the divcheck binary under test with these arguments.
ProcessResult run_divcheck(const std::vector<std::string>& args);
std::string divcheck_binary();

// A fresh folder under the system temp dir, removed on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::string read_text(const std::string& path);
nlohmann::json read_json(const std::string& path);

}  // namespace divcheck::testing

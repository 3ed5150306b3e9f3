// Every subcommand rejects invalid arguments with exit status 2 and a message on stderr that
// names the offending option (or argument) and its value, and writes no report.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/cli/process.hpp"

namespace divcheck::testing {
namespace {

struct BadCall {
  std::vector<std::string> args;
  std::vector<std::string> message_names;  // substrings stderr must contain
};

void expect_usage_error(const BadCall& c, const ScratchDir& dir) {
  std::string shown;
  for (const auto& a : c.args) shown += a + " ";
  SCOPED_TRACE(shown);
  const ProcessResult r = run_divcheck(c.args);
  EXPECT_EQ(r.exit_code, 2) << r.all();
  for (const auto& m : c.message_names) EXPECT_NE(r.err.find(m), std::string::npos) << "stderr: " << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out" / "report.json"));
}

TEST(BadArguments, Check) {
  ScratchDir dir;
  const std::string out = dir / "out";
  const std::vector<BadCall> calls = {
      {{"check", "--bogus"}, {"--bogus", "unknown option"}},
      {{"check", "--cases"}, {"--cases", "needs a value"}},
      {{"check", "--cases", "--seed", "1"}, {"--cases", "needs a value"}},
      {{"check", "--cases", "abc"}, {"--cases", "abc"}},
      {{"check", "--cases", "-3"}, {"--cases", "-3"}},
      {{"check", "--cases", "0"}, {"--cases", "0"}},
      {{"check", "--cases", "2.5"}, {"--cases", "2.5"}},
      {{"check", "--cases", "3", "--cases", "4"}, {"--cases", "more than once"}},
      {{"check", "--seed", "-1"}, {"--seed", "-1"}},
      {{"check", "--seed", "18446744073709551616"}, {"--seed", "18446744073709551616"}},
      {{"check", "--seed", "0x10"}, {"--seed", "0x10"}},
      {{"check", "--shard", "3/2"}, {"--shard", "3/2"}},
      {{"check", "--shard", "2/2"}, {"--shard", "2/2"}},
      {{"check", "--shard", "0/0"}, {"--shard", "0/0"}},
      {{"check", "--shard", "1"}, {"--shard", "1"}},
      {{"check", "--shard", "a/b"}, {"--shard", "a/b"}},
      {{"check", "--time-budget", "-1"}, {"--time-budget", "-1"}},
      {{"check", "--time-budget", "0"}, {"--time-budget", "0"}},
      {{"check", "--time-budget", "soon"}, {"--time-budget", "soon"}},
      {{"check", "--time-budget", "inf"}, {"--time-budget", "inf"}},
      {{"check", "--jobs", "0"}, {"--jobs", "0"}},
      {{"check", "--jobs", "many"}, {"--jobs", "many"}},
      {{"check", "--divergence", "kl"}, {"--divergence", "kl", "tvd_prob", "masked_kl_divergence"}},
      {{"check", "--divergence", "tvd_prob,"}, {"--divergence", "empty item"}},
      {{"check", "--families", "no_such_family"}, {"--families", "no_such_family"}},
      {{"check", "--backend", "tpu"}, {"--backend", "tpu"}},
      {{"check", "--verbose=yes"}, {"--verbose", "yes"}},
      {{"check", "--only-case", "-1"}, {"--only-case", "-1"}},
      {{"check", "--only-case", "2", "--cases", "3"}, {"--only-case", "--cases"}},
      {{"check", "--only-case", "2", "--shard", "0/2"}, {"--only-case", "--shard"}},
      {{"check", "--out", ""}, {"--out"}},
      {{"check", "--shrink-seconds", "-2"}, {"--shrink-seconds", "-2"}},
      {{"check", "stray"}, {"stray"}},
  };
  for (const auto& c : calls) {
    BadCall with_out = c;
    if (c.args != std::vector<std::string>{"check", "--out", ""}) {
      with_out.args.push_back("--out");
      with_out.args.push_back(out);
    }
    expect_usage_error(with_out, dir);
  }
}

TEST(BadArguments, OutputFolderThatCannotBeCreated) {
  ScratchDir dir;
  const std::string file = dir / "a-file";
  { std::ofstream(file) << "x"; }
  const ProcessResult r =
      run_divcheck({"check", "--backend", "cpu", "--divergence", "tvd_prob", "--cases", "1", "--out", file + "/out"});
  EXPECT_EQ(r.exit_code, 2) << r.all();
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("divcheck check: backend"), std::string::npos) << "no case should have started: " << r.out;
}

TEST(BadArguments, OtherCommands) {
  ScratchDir dir;
  const std::vector<BadCall> calls = {
      {{}, {"usage"}},
      {{"frobnicate"}, {"frobnicate", "unknown command"}},
      {{"repro"}, {"CASE_FILE", "missing"}},
      {{"repro", "a.safetensors", "b.safetensors"}, {"CASE_FILE", "exactly one"}},
      {{"repro", "a.safetensors", "--precision", "fp64"}, {"--precision", "fp64"}},
      {{"repro", "a.safetensors", "--backend", "tpu"}, {"--backend", "tpu"}},
      {{"repro", "a.safetensors", "--bogus"}, {"--bogus"}},
      {{"verify-results", "only-one.safetensors"}, {"CASE_FILE RESULTS_FILE"}},
      {{"export-case", "--family", "x", "--out", dir / "c.safetensors"}, {"--divergence", "required"}},
      {{"export-case", "--divergence", "tvd_prob", "--out", dir / "c.safetensors"}, {"--family", "required"}},
      {{"export-case", "--divergence", "nope", "--family", "x", "--out", dir / "c.safetensors"}, {"--divergence", "nope"}},
      {{"export-case", "--divergence", "tvd_prob", "--family", "nope", "--out", dir / "c.safetensors"},
       {"--family", "nope"}},
      {{"list", "--divergence", "nope"}, {"--divergence", "nope"}},
      {{"list", "extra"}, {"extra"}},
  };
  for (const auto& c : calls) expect_usage_error(c, dir);
  EXPECT_FALSE(std::filesystem::exists(dir / "c.safetensors"));
}

TEST(BadArguments, ExportCaseSizeOutOfRange) {
  ScratchDir dir;
  // A valid family of tvd_prob: the first one `list` prints is not known here, so take it from
  // the error message's list of valid families.
  const ProcessResult probe =
      run_divcheck({"export-case", "--divergence", "tvd_prob", "--family", "nope", "--out", dir / "c.safetensors"});
  const auto valid = probe.err.find("valid: ");
  ASSERT_NE(valid, std::string::npos) << probe.err;
  std::string family = probe.err.substr(valid + 7);
  family = family.substr(0, family.find_first_of(",\n"));
  for (const char* size : {"101", "-1", "ten"}) {
    const ProcessResult r = run_divcheck({"export-case", "--divergence", "tvd_prob", "--family", family, "--size", size,
                                          "--out", dir / "c.safetensors"});
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_NE(r.err.find("--size"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(size), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "c.safetensors"));
}

}  // namespace
}  // namespace divcheck::testing

// End-to-end tests of `divcheck check` through the built binary: a small gate, the report
// files, sharding, determinism, --jobs, --only-case, the time budget and the cuda backend's
// availability message.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "cli/case_stream.hpp"
#include "core/registry.hpp"
#include "core/version.hpp"
#include "kernels/backend.hpp"
#include "tests/cli/process.hpp"
#include "tests/cli/xml_check.hpp"

namespace divcheck::testing {
namespace {

using nlohmann::json;

// Runs `divcheck check ARGS --out OUT` and returns report.json, asserting the exit status.
json gate_report(const std::string& out, std::vector<std::string> args, int expected_exit = 0) {
  args.insert(args.begin(), "check");
  args.push_back("--out");
  args.push_back(out);
  const ProcessResult r = run_divcheck(args);
  EXPECT_EQ(r.exit_code, expected_exit) << r.all();
  return read_json(out + "/report.json");
}

// The deterministic content of a report: per divergence, the case list without timings.
json case_lists(const json& report) {
  json out = json::object();
  for (const auto& d : report.at("divergences")) {
    json cases = json::array();
    for (auto c : d.at("case_list")) {
      c.erase("seconds");
      cases.push_back(c);
    }
    out[d.at("name").get<std::string>()] = cases;
  }
  return out;
}

TEST(CheckCommand, SmallGatePassesAndWritesTheReports) {
  ScratchDir dir;
  const std::string out = dir / "out";
  const ProcessResult r = run_divcheck({"check", "--cases", "3", "--divergence", "tvd_prob", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("seed 20261130"), std::string::npos) << r.out;  // the default seed is printed
  EXPECT_NE(r.out.find("worst (of bound)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tvd_prob"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[tvd_prob] 3/3 cases, 0 failures"), std::string::npos) << r.err;

  const json rep = read_json(out + "/report.json");
  for (const char* field : {"schema_version", "tool_version", "started_at", "wall_seconds", "command_line", "backend",
                            "seed", "shard", "cases_per_divergence", "time_budget", "budget_exhausted",
                            "environment", "divergences"})
    EXPECT_TRUE(rep.contains(field)) << field;
  EXPECT_EQ(rep["schema_version"], kReportSchemaVersion);
  EXPECT_EQ(rep["tool_version"], kVersion);
  EXPECT_EQ(rep["seed"], gate::kDefaultSeed);
  EXPECT_EQ(rep["shard"], (json{{"index", 0}, {"count", 1}}));
  EXPECT_EQ(rep["cases_per_divergence"], 3);
  EXPECT_TRUE(rep["time_budget"].is_null());
  EXPECT_EQ(rep["budget_exhausted"], false);
  EXPECT_EQ(rep["passed"], true);
  for (const char* field : {"hostname", "cpu_model", "compiler", "git_sha", "gpu"})
    EXPECT_TRUE(rep["environment"].contains(field)) << field;
  if (rep["environment"]["gpu"].is_null()) {
    EXPECT_TRUE(rep["environment"]["gpu_unavailable_reason"].is_string());
  }
  ASSERT_EQ(rep["divergences"].size(), 1u);
  const json& d = rep["divergences"][0];
  EXPECT_EQ(d["name"], "tvd_prob");
  EXPECT_EQ(d["planned"], 3);
  EXPECT_EQ(d["cases"], 3);
  EXPECT_EQ(d["passed"], 3);
  EXPECT_EQ(d["failed"], 0);
  EXPECT_TRUE(d["failures"].empty());
  ASSERT_EQ(d["case_list"].size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const json& c = d["case_list"][k];
    EXPECT_EQ(c["k"], k);
    EXPECT_EQ(c["seed"], gate::case_seed(gate::kDefaultSeed, "tvd_prob", k));
    EXPECT_EQ(c["size"], gate::case_size(k));
    EXPECT_EQ(c["passed"], true);
  }
  std::int64_t grouped = 0;
  for (const auto& g : d["by_family_dtype"]) grouped += g["cases"].get<std::int64_t>();
  EXPECT_EQ(grouped, 3);

  const std::string xml = read_text(out + "/junit.xml");
  EXPECT_EQ(xml_wellformedness_error(xml), "") << xml;
  EXPECT_EQ(count_elements(xml, "testsuite"), 1);
  EXPECT_EQ(count_elements(xml, "testcase"), static_cast<int>(d["by_family_dtype"].size()));
  EXPECT_EQ(count_elements(xml, "failure"), 0);
  EXPECT_NE(read_text(out + "/report.md").find("# divcheck check: PASS"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out + "/failures"));
}

TEST(CheckCommand, ShardsTogetherCoverExactlyTheUnshardedRun) {
  ScratchDir dir;
  const std::vector<std::string> base{"--cases", "6", "--divergence", "tvd_prob,total_variation", "--backend", "cpu"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const json all = case_lists(gate_report(dir / "all", base));
  const json s0 = case_lists(gate_report(dir / "s0", with({"--shard", "0/2"})));
  const json s1 = case_lists(gate_report(dir / "s1", with({"--shard", "1/2"})));
  ASSERT_EQ(all.size(), 2u);
  for (const auto& [name, cases] : all.items()) {
    ASSERT_EQ(cases.size(), 6u) << name;
    json merged = json::array();
    for (const auto& c : s0[name]) {
      EXPECT_EQ(c["k"].get<int>() % 2, 0) << name;
      merged.push_back(c);
    }
    for (const auto& c : s1[name]) {
      EXPECT_EQ(c["k"].get<int>() % 2, 1) << name;
      merged.push_back(c);
    }
    std::sort(merged.begin(), merged.end(), [](const json& a, const json& b) { return a["k"] < b["k"]; });
    EXPECT_EQ(merged, cases) << name;
  }
}

TEST(CheckCommand, SameSeedSameCasesAndRatios) {
  ScratchDir dir;
  const std::vector<std::string> args{"--cases", "4", "--divergence", "tvd_prob", "--seed", "7", "--backend", "cpu"};
  const json a = case_lists(gate_report(dir / "a", args));
  const json b = case_lists(gate_report(dir / "b", args));
  EXPECT_EQ(a, b);
  ASSERT_EQ(a["tvd_prob"].size(), 4u);
  std::vector<std::string> other = args;
  other[5] = "8";
  const json c = case_lists(gate_report(dir / "c", other));
  EXPECT_NE(a["tvd_prob"][0]["seed"], c["tvd_prob"][0]["seed"]);  // the seed reaches the cases
}

TEST(CheckCommand, JobsDoNotChangeTheResults) {
  // Every divergence, so that each backend and reference runs concurrently with the others.
  // The exit status is not asserted (a failing case is a finding of another area's test); it
  // must merely be the same for both job counts, like the case lists.
  ScratchDir dir;
  ProcessResult r[2];
  json lists[2];
  for (int j = 0; j < 2; ++j) {
    const std::string out = dir / (j == 0 ? "j1" : "j2");
    r[j] = run_divcheck({"check", "--cases", "6", "--backend", "cpu", "--shrink-cases", "0", "--jobs",
                         j == 0 ? "1" : "2", "--out", out});
    ASSERT_TRUE(r[j].exit_code == 0 || r[j].exit_code == 1) << r[j].all();
    const json rep = read_json(out + "/report.json");
    EXPECT_EQ(rep["jobs"], j + 1);
    EXPECT_EQ(rep["divergences"].size(), registry().size());
    lists[j] = case_lists(rep);
  }
  EXPECT_EQ(r[0].exit_code, r[1].exit_code);
  EXPECT_EQ(lists[0], lists[1]);
}

TEST(CheckCommand, OnlyCaseReplaysOneCaseOfTheStream) {
  ScratchDir dir;
  const json all = case_lists(gate_report(dir / "all", {"--cases", "6", "--divergence", "tvd_prob", "--backend", "cpu"}));
  const json one = case_lists(gate_report(dir / "one", {"--only-case", "4", "--divergence", "tvd_prob", "--backend", "cpu"}));
  ASSERT_EQ(one["tvd_prob"].size(), 1u);
  EXPECT_EQ(one["tvd_prob"][0], all["tvd_prob"][4]);
}

TEST(CheckCommand, ExhaustedTimeBudgetIsReportedAndIsNotAFailure) {
  ScratchDir dir;
  const std::string out = dir / "out";
  // A budget of 1 ns is over before the first case starts: nothing runs, nothing fails.
  const ProcessResult r = run_divcheck(
      {"check", "--cases", "5", "--divergence", "tvd_prob", "--time-budget", "1e-9", "--backend", "cpu", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("budget exhausted: ran 0 of 5"), std::string::npos) << r.out;
  const json rep = read_json(out + "/report.json");
  EXPECT_EQ(rep["budget_exhausted"], true);
  EXPECT_EQ(rep["time_budget"], 1e-9);
  EXPECT_EQ(rep["divergences"][0]["planned"], 5);
  EXPECT_EQ(rep["divergences"][0]["cases"], 0);
  EXPECT_EQ(rep["divergences"][0]["budget_exhausted"], true);
  const std::string xml = read_text(out + "/junit.xml");
  EXPECT_EQ(xml_wellformedness_error(xml), "");
  EXPECT_EQ(count_elements(xml, "skipped"), 1);
}

TEST(CheckCommand, GenerousTimeBudgetRunsEverything) {
  ScratchDir dir;
  const json rep =
      gate_report(dir / "out", {"--cases", "3", "--divergence", "tvd_prob", "--time-budget", "3600", "--backend", "cpu"});
  EXPECT_EQ(rep["budget_exhausted"], false);
  EXPECT_EQ(rep["divergences"][0]["cases"], 3);
}

TEST(CheckCommand, FamilyFilterKeepsTheStreamIndices) {
  ScratchDir dir;
  const json all = case_lists(gate_report(dir / "all", {"--cases", "8", "--divergence", "tvd_prob", "--backend", "cpu"}));
  const std::string family = all["tvd_prob"][1]["family"];
  const json some = case_lists(
      gate_report(dir / "some", {"--cases", "8", "--divergence", "tvd_prob", "--families", family, "--backend", "cpu"}));
  json expected = json::array();
  for (const auto& c : all["tvd_prob"])
    if (c["family"] == family) expected.push_back(c);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(some["tvd_prob"], expected);
}

TEST(CheckCommand, CudaBackendRunsOrSaysWhyNot) {
  ScratchDir dir;
  const ProcessResult r = run_divcheck(
      {"check", "--backend", "cuda", "--cases", "1", "--divergence", "tvd_prob", "--out", dir / "out"});
  if (cuda_device_present()) {
    EXPECT_EQ(r.exit_code, 0) << r.all();
  } else {
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_NE(r.err.find("--backend cuda"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not available"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "out/report.json"));
  }
}

TEST(CheckCommand, HelpVersionAndList) {
  const ProcessResult help = run_divcheck({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* cmd : {"check", "repro", "verify-results", "export-case", "list"})
    EXPECT_NE(help.out.find(cmd), std::string::npos) << cmd;
  const ProcessResult check_help = run_divcheck({"check", "--help"});
  EXPECT_EQ(check_help.exit_code, 0);
  EXPECT_NE(check_help.out.find("--time-budget"), std::string::npos);
  const ProcessResult version = run_divcheck({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find(std::string("divcheck ") + kVersion), std::string::npos) << version.out;
  const ProcessResult list = run_divcheck({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.all();
  for (const auto& row : registry()) EXPECT_NE(list.out.find(std::string(row.name)), std::string::npos) << row.name;
  EXPECT_NE(list.out.find("families:"), std::string::npos);
}

}  // namespace
}  // namespace divcheck::testing

// The gate's failure path end to end, on the deliberately broken backends of tests/broken: the
// gate exits 1, saves a shrunk case file, records replay and regenerate commands, writes
// well-formed reports; `repro` of the saved case fails on the broken backend and passes on the
// CPU backend (the case isolates the backend's bug); shrinking is deterministic whatever --jobs
// is; every broken backend is caught; a backend that throws is a failure, not a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "cli/commands.hpp"
#include "core/case_file.hpp"
#include "properties/generators.hpp"
#include "tests/broken/broken_backends.hpp"
#include "tests/cli/process.hpp"
#include "tests/cli/xml_check.hpp"

namespace divcheck::testing {
namespace {

using nlohmann::json;

struct InProcess {
  int exit_code;
  std::string out, err;
};

// Runs `divcheck ARGS` in-process with `backend` injected in place of --backend.
InProcess run_with_backend(const Backend& backend, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  cli::CommandContext ctx;
  ctx.program = divcheck_binary();
  ctx.backend_override = &backend;
  const int rc = cli::run_cli(args, out, err, ctx);
  return {rc, out.str(), err.str()};
}

std::int64_t total_input_elements(const Case& c) {
  std::int64_t n = 0;
  for (const auto& [role, t] : c.inputs) n += t.numel();
  return n;
}

// 22 cases of tvd_prob: two of each of its 11 families, so the exact-tie families are in.
const std::vector<std::string> kTvdGate = {"check", "--divergence", "tvd_prob", "--cases", "22", "--seed", "3"};

TEST(BrokenBackendGate, TwoWaySelectIsCaughtShrunkSavedAndReplayable) {
  ScratchDir dir;
  const std::string out = dir / "out";
  const auto broken = make_broken_backend("tvd_two_way_select");
  std::vector<std::string> args = kTvdGate;
  args.insert(args.end(), {"--out", out});
  const InProcess r = run_with_backend(*broken, args);
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("repro:"), std::string::npos) << r.out;

  const json rep = read_json(out + "/report.json");
  EXPECT_EQ(rep["passed"], false);
  EXPECT_EQ(rep["backend"], "tvd_two_way_select");
  const json& d = rep["divergences"][0];
  ASSERT_GT(d["failed"].get<int>(), 0);
  ASSERT_EQ(d["failures"].size(), d["failed"].get<std::size_t>());
  int shrunk_and_checked = 0;
  for (const auto& f : d["failures"]) {
    SCOPED_TRACE(f.dump());
    ASSERT_TRUE(f["case_file"].is_string());
    const std::string file = f["case_file"];
    ASSERT_TRUE(std::filesystem::exists(file));
    EXPECT_EQ(std::filesystem::path(file).filename().string(),
              "tvd_prob-" + f["family"].get<std::string>() + "-" + std::to_string(f["k"].get<int>()) + ".safetensors");
    EXPECT_EQ(f["repro"], divcheck_binary() + " repro " + file + " --backend tvd_two_way_select");
    EXPECT_NE(f["regenerate"].get<std::string>().find("--only-case " + std::to_string(f["k"].get<int>())),
              std::string::npos);
    EXPECT_TRUE(f["error"].is_null());
    EXPECT_FALSE(f["tensors"].empty());

    const Case saved = read_case(file);
    EXPECT_EQ(saved.id, DivergenceId::tvd_prob);
    EXPECT_EQ(saved.provenance.family, f["family"]);
    if (f["shrink"]["attempted"] == true) {
      // The shrunk case is no larger than the case the stream drew.
      const Case drawn = draw_case(DivergenceId::tvd_prob, f["family"].get<std::string>(), f["seed"].get<std::uint64_t>(),
                                   f["size"].get<int>())
                             .value();
      EXPECT_LE(total_input_elements(saved), total_input_elements(drawn));
      ++shrunk_and_checked;
    }

    // Replaying the saved case: it fails on the broken backend, passes on the CPU backend.
    const InProcess replay = run_with_backend(*broken, {"repro", file});
    EXPECT_EQ(replay.exit_code, 1) << replay.out << replay.err;
    EXPECT_NE(replay.out.find("\nFAIL"), std::string::npos) << replay.out;
    const ProcessResult cpu = run_divcheck({"repro", file, "--backend", "cpu"});
    EXPECT_EQ(cpu.exit_code, 0) << cpu.all();
  }
  EXPECT_GT(shrunk_and_checked, 0);

  const std::string xml = read_text(out + "/junit.xml");
  EXPECT_EQ(xml_wellformedness_error(xml), "") << xml;
  EXPECT_GT(count_elements(xml, "failure"), 0);
  EXPECT_NE(xml.find("repro"), std::string::npos);
  EXPECT_NE(read_text(out + "/report.md").find("# divcheck check: FAIL"), std::string::npos);
}

TEST(BrokenBackendGate, ShrinkingAndFailuresDoNotDependOnJobs) {
  ScratchDir dir;
  const auto broken = make_broken_backend("tvd_two_way_select");
  json failures[2];
  for (int jobs = 1; jobs <= 2; ++jobs) {
    const std::string out = dir / (jobs == 1 ? "j1" : "j2");  // (not "j" + to_string: a GCC 12 -Wrestrict false positive)
    std::vector<std::string> args = kTvdGate;
    args.insert(args.end(), {"--jobs", std::to_string(jobs), "--out", out});
    const InProcess r = run_with_backend(*broken, args);
    ASSERT_EQ(r.exit_code, 1) << r.err;
    failures[jobs - 1] = read_json(out + "/report.json")["divergences"][0]["failures"];
    for (auto& f : failures[jobs - 1]) {  // the folder differs by construction
      f.erase("case_file");
      f.erase("repro");
    }
  }
  EXPECT_EQ(failures[0], failures[1]);
  // And the saved cases are bitwise the same.
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "j1" / "failures"))
    EXPECT_EQ(read_text(e.path().string()),
              read_text((dir.path() / "j2" / "failures" / e.path().filename()).string()))
        << e.path();
}

TEST(BrokenBackendGate, EveryBrokenBackendIsCaught) {
  for (const auto& [name, backend] : make_broken_backends()) {
    SCOPED_TRACE(name);
    ScratchDir dir;
    std::vector<std::string> args{"check", "--cases", "40", "--shrink-cases", "1", "--shrink-attempts", "100",
                                  "--out", dir / "out"};
    for (const auto& b : broken_backend_catalog())
      if (b.name == name)
        for (DivergenceId id : b.breaks) args.insert(args.end(), {"--divergence", std::string(name_of(id))});
    const InProcess r = run_with_backend(*backend, args);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(read_json(dir / "out/report.json")["passed"], false);
  }
}

// A backend that throws on every case: each case is a failure carrying the exception text.
class ThrowingBackend : public Backend {
 public:
  std::string_view name() const override { return "throwing"; }
  Outputs run(const Case&) const override { throw std::runtime_error("device lost"); }
};

TEST(BrokenBackendGate, ThrowingBackendIsAReportedFailure) {
  ScratchDir dir;
  ThrowingBackend throwing;
  const InProcess r = run_with_backend(
      throwing, {"check", "--divergence", "tvd_prob", "--cases", "2", "--shrink-attempts", "5", "--out", dir / "out"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json d = read_json(dir / "out/report.json")["divergences"][0];
  EXPECT_EQ(d["failed"], 2);
  EXPECT_EQ(d["worst_ratio"], "inf");
  for (const auto& f : d["failures"]) {
    EXPECT_EQ(f["error"], "backend throwing threw: device lost");
    EXPECT_EQ(f["summary"], "ERROR backend throwing threw: device lost");
    EXPECT_TRUE(f["case_file"].is_string());
  }
}

}  // namespace
}  // namespace divcheck::testing

namespace divcheck::testing {
namespace {

// A backend that implements only tvd_prob (as the CUDA backend lacks fused-linear and dcor).
class OnlyTvdProbBackend : public Backend {
 public:
  std::string_view name() const override { return "only_tvd_prob"; }
  bool supports(DivergenceId id) const override { return id == DivergenceId::tvd_prob; }
  Outputs run(const Case& c) const override { return cpu_->run(c); }

 private:
  std::unique_ptr<Backend> cpu_ = make_cpu_backend();
};

TEST(BrokenBackendGate, UnsupportedRowsAreReportedNotRunNeverPassed) {
  ScratchDir dir;
  const std::string out = dir / "out";
  OnlyTvdProbBackend backend;
  const InProcess r = run_with_backend(
      backend, {"check", "--divergence", "tvd_prob,masked_unbiased_dcor", "--cases", "4", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("not run: unsupported by backend only_tvd_prob"), std::string::npos) << r.out;
  const json rep = read_json(out + "/report.json");
  bool saw_dcor = false;
  for (const auto& d : rep["divergences"]) {
    if (d["name"] == "masked_unbiased_dcor") {
      saw_dcor = true;
      EXPECT_EQ(d["cases"], 0);
      EXPECT_EQ(d["passed"], 0);
      EXPECT_EQ(d["not_run"], "unsupported by backend only_tvd_prob");
    } else {
      EXPECT_EQ(d["cases"], 4);
      EXPECT_TRUE(d["not_run"].is_null());
    }
  }
  EXPECT_TRUE(saw_dcor);
  std::ifstream junit(out + "/junit.xml");
  const std::string xml((std::istreambuf_iterator<char>(junit)), std::istreambuf_iterator<char>());
  EXPECT_NE(xml.find("<skipped message=\"not run: unsupported by backend only_tvd_prob\"/>"), std::string::npos);
}

}  // namespace
}  // namespace divcheck::testing

// `divcheck export-case`, `repro` and `verify-results` through the built binary: a saved case
// replays and passes, outside results are judged (correct ones pass, a perturbed one fails),
// and corrupt or missing files are rejected with exit status 2 and a message naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/case_file.hpp"
#include "kernels/backend.hpp"
#include "properties/generators.hpp"
#include "tests/cli/process.hpp"

namespace divcheck::testing {
namespace {

std::string first_family(DivergenceId id) { return std::string(families(id).front().name); }

// Exports a tvd_prob case (the first family, seed 5, size 12) and returns its path.
std::string export_case(const ScratchDir& dir, DivergenceId id = DivergenceId::tvd_prob) {
  const std::string path = dir / "case.safetensors";
  const ProcessResult r = run_divcheck({"export-case", "--divergence", std::string(name_of(id)), "--family",
                                        first_family(id), "--seed", "5", "--size", "12", "--out", path});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("wrote " + path), std::string::npos) << r.out;
  return path;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(ExportCase, WritesTheGateDrawWithProvenance) {
  ScratchDir dir;
  const Case c = read_case(export_case(dir));
  EXPECT_EQ(c.id, DivergenceId::tvd_prob);
  EXPECT_EQ(c.provenance.family, first_family(DivergenceId::tvd_prob));
  EXPECT_EQ(c.provenance.seed, 5u);
  // The same draw as the library's: bitwise equal inputs.
  const Case again = draw_case(DivergenceId::tvd_prob, first_family(DivergenceId::tvd_prob), 5, 12).value();
  ASSERT_EQ(c.inputs.size(), again.inputs.size());
  for (const auto& [role, t] : again.inputs) EXPECT_TRUE(c.inputs.at(role).bitwise_equal(t)) << role;
}

TEST(Repro, SavedCasePassesOnTheCpuBackend) {
  ScratchDir dir;
  const std::string path = export_case(dir);
  const ProcessResult r = run_divcheck({"repro", path, "--backend", "cpu"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("divergence:  tvd_prob"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters:  reduction="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("provenance:  family " + first_family(DivergenceId::tvd_prob) + ", seed 5"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("loss"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nPASS"), std::string::npos) << r.out;
}

TEST(Repro, Mpfr50PrecisionAgrees) {
  ScratchDir dir;
  const std::string path = export_case(dir);
  const ProcessResult r = run_divcheck({"repro", path, "--backend", "cpu", "--precision", "mpfr50"});
  EXPECT_EQ(r.exit_code, 0) << r.all();
  EXPECT_NE(r.out.find("mpfr50 reference"), std::string::npos) << r.out;
}

TEST(Repro, CorruptFilesAreRejectedWithTheirName) {
  ScratchDir dir;
  const std::string good = read_text(export_case(dir));
  struct Corrupt {
    std::string name;
    std::string bytes;
  };
  std::string huge_header = good;
  for (int i = 0; i < 8; ++i) huge_header[i] = '\xff';  // header length 2^64 - 1
  std::string bad_json = good;
  bad_json[8] = '[';  // the header must be a JSON object
  const std::vector<Corrupt> corrupt = {
      {"empty.safetensors", ""},
      {"short.safetensors", "abc"},
      {"garbage.safetensors", std::string(64, '\x5a')},
      {"truncated.safetensors", good.substr(0, good.size() / 2)},
      {"header_length.safetensors", huge_header},
      {"header_json.safetensors", bad_json},
  };
  for (const auto& c : corrupt) {
    SCOPED_TRACE(c.name);
    write_bytes(dir / c.name, c.bytes);
    const ProcessResult r = run_divcheck({"repro", dir / c.name, "--backend", "cpu"});
    EXPECT_EQ(r.exit_code, 2) << r.all();
    EXPECT_NE(r.err.find(c.name), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("divcheck repro: error"), std::string::npos) << r.err;
  }
  const ProcessResult missing = run_divcheck({"repro", dir / "missing.safetensors"});
  EXPECT_EQ(missing.exit_code, 2) << missing.all();
  EXPECT_NE(missing.err.find("missing.safetensors"), std::string::npos) << missing.err;
}

TEST(VerifyResults, CorrectResultsPassAndAPerturbedLossFails) {
  ScratchDir dir;
  const std::string case_path = export_case(dir);
  const Case c = read_case(case_path);
  const Outputs good = compute(*make_cpu_backend(), c);
  write_outputs(dir / "good.safetensors", c, good);
  const ProcessResult ok = run_divcheck({"verify-results", case_path, dir / "good.safetensors"});
  EXPECT_EQ(ok.exit_code, 0) << ok.all();
  EXPECT_NE(ok.out.find("results file"), std::string::npos) << ok.out;

  // Move one finite loss element by 1 + |value|: far outside any bound of a float32 result.
  Outputs bad = good;
  std::int64_t at = -1;
  for (std::int64_t i = 0; i < bad.loss.numel() && at < 0; ++i)
    if (std::isfinite(bad.loss.get(i))) at = i;
  ASSERT_GE(at, 0) << "no finite loss element to perturb";
  bad.loss.set(at, bad.loss.get(at) + 1.0 + std::fabs(bad.loss.get(at)));
  write_outputs(dir / "bad.safetensors", c, bad);
  const ProcessResult fail = run_divcheck({"verify-results", case_path, dir / "bad.safetensors"});
  EXPECT_EQ(fail.exit_code, 1) << fail.all();
  EXPECT_NE(fail.out.find("\nFAIL"), std::string::npos) << fail.out;

  write_bytes(dir / "junk.safetensors", "junk");
  const ProcessResult junk = run_divcheck({"verify-results", case_path, dir / "junk.safetensors"});
  EXPECT_EQ(junk.exit_code, 2) << junk.all();
  EXPECT_NE(junk.err.find("junk.safetensors"), std::string::npos) << junk.err;
}

}  // namespace
}  // namespace divcheck::testing

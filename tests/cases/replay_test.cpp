// The checked-in reproducers of cases/: each replays clean on the CPU backend, and the seed
// bug's case (shared/seeds/000, made by scripts/make-seed-case.py) exposes the two-way select
// exactly as the bug report describes it: loss 0, every one of the 8 x 512 gradient elements
// wrong, each -0.5 * (1/8) = -0.0625 instead of 0 (batchmean over 8 rows, g = 1). The dcor case
// (the CPU gate, seed 20261260, case 27204, shrunk) keeps the overflow rule of the verdict tested:
// its f16 gradient overflows to ±inf where the reference is 0 with a bound beyond f16's range.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/case_file.hpp"
#include "kernels/backend.hpp"
#include "properties/verdict.hpp"
#include "reference/reference.hpp"
#include "tests/broken/broken_backends.hpp"

namespace divcheck {
namespace {

std::vector<std::string> case_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(DIVCHECK_CASES_DIR))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(CasesReplay, EveryCheckedInCasePassesOnTheCpuBackend) {
  auto files = case_files();
  ASSERT_FALSE(files.empty()) << "no case files in " << DIVCHECK_CASES_DIR;
  auto cpu = make_cpu_backend();
  for (const auto& f : files) {
    Case c = read_case(f);
    Verdict v = judge(c, compute(*cpu, c), compute_reference(c));
    EXPECT_TRUE(v.pass) << f << ": " << v.summary();
  }
}

TEST(CasesReplay, SeedBugCaseExposesTheTwoWaySelect) {
  Case c = read_case(std::string(DIVCHECK_CASES_DIR) + "/tvd_prob-seed-000-self-distillation.safetensors");
  ASSERT_EQ(c.input("p")->shape(), (Shape{8, 512}));
  auto broken = make_broken_backend("tvd_two_way_select");
  Outputs got = compute(*broken, c);
  EXPECT_EQ(got.loss.get(0), 0.0);  // the loss itself is right, as the report says
  const Tensor& g = got.grads.at("p");
  for (std::int64_t i = 0; i < g.numel(); ++i) ASSERT_EQ(g.get(i), -0.0625) << "element " << i;
  Verdict v = judge(c, got, compute_reference(c));
  EXPECT_FALSE(v.pass);
  for (const auto& t : v.tensors)
    if (t.name == "p") EXPECT_EQ(t.wrong, 4096) << v.summary();
}

TEST(CasesReplay, DcorCaseOverflowsAnF16GradientWithinItsBound) {
  Case c = read_case(std::string(DIVCHECK_CASES_DIR) +
                     "/masked_unbiased_dcor-duplicate_rows-f16-overflowed-gradient.safetensors");
  ASSERT_EQ(c.input("samples_2")->dtype(), DType::f16);
  auto cpu = make_cpu_backend();
  Outputs got = compute(*cpu, c);
  Expected ref = compute_reference(c);
  // The CPU kernel's ratio V(X,Y)/den rounds to 2^-26 > 0 where it is exactly 0 (the clamp's kink,
  // whose flat side the reference takes): the unclamped gradient of y's second component, -1.3e6 at
  // samples 0 and 3 and +2.6e6 at sample 1, overflows f16. Before 2026-12-07 the verdict accepted
  // the +inf (the sign of the reference +0) and rejected both -inf.
  const Tensor& g = got.grads.at("samples_2");
  const ExpectedTensor& r = ref.grads.at("samples_2");
  int overflowed = 0;
  for (std::int64_t i = 0; i < g.numel(); ++i)
    if (std::isinf(g.get(i))) {
      ++overflowed;
      EXPECT_EQ(r.value[static_cast<std::size_t>(i)], 0.0) << "element " << i;
    }
  EXPECT_EQ(overflowed, 3);
  Verdict v = judge(c, got, ref);
  EXPECT_TRUE(v.pass) << v.summary();
}

}  // namespace
}  // namespace divcheck

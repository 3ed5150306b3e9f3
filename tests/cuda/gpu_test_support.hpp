// Shared pieces of the GPU tests: the fixture that skips (GTEST_SKIP, reported by ctest as
// skipped, never as passed) when no CUDA device is visible, the backends, the judge of a GPU
// result against the float128 reference, and the comparison of a GPU result with the CPU
// backend's (NaN where and only where, exact zeros alike, distance within the sum of the two
// verdict bounds, and how many elements are bitwise equal).
#pragma once

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "core/case.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "properties/verdict.hpp"
#include "reference/reference.hpp"

namespace divcheck::gputest {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  const Backend& gpu() const { return *gpu_; }
  const Backend& cpu() const { return *cpu_; }

 private:
  std::unique_ptr<Backend> gpu_, cpu_;
};

// The ten rows of issue 3 (everything the CUDA backend supports), in registry order.
std::vector<DivergenceId> gpu_rows();

// A label for failure messages: "masked_kl_divergence bf16 family seed".
std::string label(const Case& c);

// Runs the GPU backend (validating first), judges it against the reference and returns the
// verdict; on failure the message names the case.
::testing::AssertionResult gpu_passes(const Backend& gpu, const Case& c);
// Same with a precomputed reference.
::testing::AssertionResult gpu_passes(const Outputs& got, const Case& c, const Expected& e);

struct Agreement {
  std::int64_t elements = 0;
  std::int64_t bitwise_equal = 0;  // NaN counts as equal to NaN
  double worst = 0.0;              // max |gpu - cpu| / (bound_gpu + bound_cpu)
  std::string first_problem;       // "" when every element agrees
};
// Compares two backends' outputs of one case element by element against the reference's
// bounds (2 x the verdict bound: each one is within its bound of the exact value).
Agreement compare_backends(const Case& c, const Outputs& gpu, const Outputs& cpu, const Expected& e);

// Bitwise equality of two outputs (every tensor; NaN payloads may differ, both must be NaN).
::testing::AssertionResult bitwise_same(const Outputs& a, const Outputs& b);

}  // namespace divcheck::gputest

// The arithmetic behind the logit kernel's plan (kernels/cuda/plan_math.hpp) at the benchmark
// shapes, with the H100/H200 opt-in shared memory of 227 KB (232448 bytes) per block less the
// kernel's static shared memory (under 4 KB): the smallest cluster whose slices fit.
#include <gtest/gtest.h>

#include "kernels/cuda/plan_math.hpp"

namespace divcheck::cuda {
namespace {

constexpr std::size_t kBudget = 232448 - 4096;

// The smallest power-of-two CTA count <= 16 whose slices fit, or 0.
int smallest_fitting(std::int64_t vocab, std::size_t elem) {
  for (int c : {1, 2, 4, 8, 16})
    if (staged_bytes(slice_for(vocab, c), elem, false) <= kBudget) return c;
  return 0;
}

TEST(PlanMath, SlicesAreWholeLaneBlocksCoveringTheRow) {
  for (std::int64_t v : {1, 1023, 1024, 1025, 4099, 128256, 256000})
    for (int c : {1, 2, 4, 8, 16}) {
      const std::int64_t w = slice_for(v, c);
      EXPECT_EQ(w % kRowThreads, 0) << v << " " << c;
      EXPECT_GE(w * c, v) << v << " " << c;
      // no more than one lane block per CTA to spare
      EXPECT_LT(w * c - v, static_cast<std::int64_t>(c) * kRowThreads) << v << " " << c;
    }
  EXPECT_EQ(staged_bytes(1024, 2, false), 4096u);
  EXPECT_EQ(staged_bytes(1024, 4, true), 2u * 4096u + 1024u);
}

TEST(PlanMath, BenchmarkShapesStageWithFourEightOrSixteenCtas) {
  EXPECT_EQ(smallest_fitting(128256, 2), 4);   // bf16: 2 x 2 x 32768 = 128 KB per CTA
  EXPECT_EQ(smallest_fitting(128256, 4), 8);   // f32:  2 x 4 x 16384 = 128 KB
  EXPECT_EQ(smallest_fitting(256000, 2), 8);   // bf16: 2 x 2 x 32768 = 128 KB
  EXPECT_EQ(smallest_fitting(256000, 4), 16);  // f32:  2 x 4 x 16384 = 128 KB (non-portable cluster)
}

}  // namespace
}  // namespace divcheck::cuda

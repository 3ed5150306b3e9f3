// Throughput of the float128 reference on one LLM-sized row (the number the README quotes), and
// the bad-argument errors of the measuring function.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/errors.hpp"
#include "reference/throughput.hpp"

namespace divcheck {
namespace {

TEST(ReferenceThroughput, MaskedKlOneRowOfLlama3Vocabulary) {
  const ReferenceThroughput t =
      measure_reference_throughput(DivergenceId::masked_kl_divergence, 1, 128256, Precision::float128, 1);
  std::printf("[ throughput ] float128 masked_kl forward + both gradients, (1, 1, 128256): %.3g elements per CPU "
              "second (%.3f s CPU, %.3f s wall)\n",
              t.elements_per_cpu_second, t.cpu_seconds, t.seconds);
  EXPECT_EQ(t.elements, 128256);
  EXPECT_GT(t.elements_per_second, 0.0);
  EXPECT_GT(t.elements_per_cpu_second, 0.0);
}

TEST(ReferenceThroughput, RejectsBadArguments) {
  EXPECT_THROW(measure_reference_throughput(DivergenceId::masked_kl_divergence, 0, 10), InvalidArgument);
  EXPECT_THROW(measure_reference_throughput(DivergenceId::masked_kl_divergence, 1, 0), InvalidArgument);
  EXPECT_THROW(measure_reference_throughput(DivergenceId::masked_unbiased_dcor, 1, 10), InvalidArgument);
}

}  // namespace
}  // namespace divcheck

// The backend API: compute() validates before running, the dispatch covers every registry row,
// and the CUDA backend reports why it is unavailable in a build without CUDA.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

class CountingBackend final : public Backend {
 public:
  mutable int runs = 0;
  std::string_view name() const override { return "counting"; }
  Outputs run(const Case&) const override {
    ++runs;
    return {};
  }
};

TEST(BackendApi, ComputeValidatesBeforeRunning) {
  CountingBackend b;
  Case c = random_case(DivergenceId::temperature_scaled_masked_kl_divergence, DType::f32, 1);
  c.params.temperature = 0.0;
  try {
    compute(b, c);
    FAIL() << "temperature = 0 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("temperature"), std::string::npos) << e.what();
  }
  EXPECT_EQ(b.runs, 0);
  c.params.temperature = 1.0;
  compute(b, c);
  EXPECT_EQ(b.runs, 1);
}

TEST(BackendApi, CpuBackendRunsEveryRow) {
  auto cpu = make_cpu_backend();
  EXPECT_EQ(cpu->name(), "cpu");
  for (DivergenceId id : all_rows()) {
    Case c = random_case(id, DType::f32, 2);
    want_all_grads(c);
    const Outputs o = compute(*cpu, c);
    EXPECT_EQ(o.loss.dtype(), DType::f32) << name_of(id);
    EXPECT_EQ(o.loss.shape(), loss_shape(c)) << name_of(id);
    for (const auto& role : c.wants_grad) {
      ASSERT_TRUE(o.grads.count(role)) << name_of(id) << " " << role;
      EXPECT_EQ(o.grads.at(role).dtype(), c.input(role)->dtype()) << name_of(id) << " " << role;
      EXPECT_EQ(o.grads.at(role).shape(), c.input(role)->shape()) << name_of(id) << " " << role;
    }
  }
}

#if !defined(DIVCHECK_HAVE_CUDA)
TEST(BackendApi, CudaUnavailableWithoutCuda) {
  EXPECT_FALSE(cuda_device_present());
  try {
    make_cuda_backend();
    FAIL() << "make_cuda_backend() returned in a build without CUDA";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("cuda backend: no CUDA device visible"), std::string::npos) << e.what();
  }
}
#endif

}  // namespace
}  // namespace divcheck::testing

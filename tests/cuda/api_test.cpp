// The CUDA backend's API contract: which rows it serves (fused_linear and dcor are reported
// unsupported and refused with Unavailable, never computed), invalid cases rejected with
// InvalidArgument before anything runs, device-API arguments checked before any CUDA call,
// and without a device a clear Unavailable from make_cuda_backend().
#include <cstring>

#include "core/errors.hpp"
#include "kernels/cuda/device_api.hpp"
#include "tests/cpu/test_cases.hpp"
#include "tests/cuda/gpu_test_support.hpp"

namespace divcheck::gputest {
namespace {

using GpuApi = GpuTest;

TEST(CudaWithoutDevice, MakeCudaBackendSaysWhy) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is visible: this test is about machines without one";
  try {
    (void)make_cuda_backend();
    FAIL() << "make_cuda_backend() returned a backend without a device";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::strstr(e.what(), "no CUDA device visible"), nullptr) << e.what();
  }
}

TEST(CudaDeviceApi, RejectsBadArgumentsBeforeAnyCudaCall) {
  cuda::LogitArgs a;
  a.batch = 0;
  a.seq = 1;
  a.vocab = 5;
  try {
    (void)cuda::launch_logit_divergence(a, nullptr);
    FAIL() << "batch = 0 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "batch");
  }
  a.batch = 1;
  a.cluster_ctas = 3;
  try {
    (void)cuda::plan_logit_divergence(a);
    FAIL() << "cluster_ctas = 3 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "cluster_ctas");
  }
  a.cluster_ctas = 0;
  a.cluster_policy = 3;
  try {
    (void)cuda::plan_logit_divergence(a);
    FAIL() << "cluster_policy = 3 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "cluster_policy");
  }
  a.cluster_policy = 0;
  a.partial_stage = 4;
  try {
    (void)cuda::plan_logit_divergence(a);
    FAIL() << "partial_stage = 4 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "partial_stage");
  }
  a.partial_stage = 2;  // a partly staged plan of 16-bit logits: the partly staged kernels are float32's
  a.dtype = cuda::FloatKind::bf16;
  try {
    (void)cuda::plan_logit_divergence(a);
    FAIL() << "partial_stage = 2 accepted for bf16 logits";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "partial_stage");
    EXPECT_NE(std::strstr(e.what(), "float32"), nullptr) << e.what();
  }
  a.partial_stage = 0;
  a.dtype = cuda::FloatKind::f32;
  cuda::TvdProbArgs t;
  t.rows = 2;
  t.vocab = -1;
  try {
    cuda::launch_tvd_prob(t, nullptr);
    FAIL() << "vocab = -1 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "vocab");
  }
}

TEST_F(GpuApi, ServesExactlyTheTenRowsOfIssue3) {
  int served = 0;
  for (const auto& d : registry()) {
    const bool expected = d.id != DivergenceId::fused_linear_masked_kl_divergence &&
                          d.id != DivergenceId::masked_unbiased_dcor;
    EXPECT_EQ(gpu().supports(d.id), expected) << d.name;
    served += gpu().supports(d.id) ? 1 : 0;
  }
  EXPECT_EQ(served, 10);
  EXPECT_EQ(gpu().name(), "cuda");
}

TEST_F(GpuApi, UnsupportedRowsAreRefusedNotComputed) {
  for (DivergenceId id : {DivergenceId::fused_linear_masked_kl_divergence, DivergenceId::masked_unbiased_dcor}) {
    Case c = divcheck::testing::random_case(id, DType::f32, 1);
    divcheck::testing::want_all_grads(c);
    EXPECT_THROW((void)compute(gpu(), c), Unavailable) << name_of(id);
  }
}

TEST_F(GpuApi, InvalidCasesAreRejectedWithTheArgumentNamed) {
  Case c = divcheck::testing::random_case(DivergenceId::temperature_scaled_masked_kl_divergence, DType::f32, 1);
  divcheck::testing::want_all_grads(c);
  c.params.temperature = -1.0;
  try {
    (void)compute(gpu(), c);
    FAIL() << "temperature = -1 accepted";
  } catch (const InvalidArgument& e) {
    const std::string arg = e.argument();  // "<divergence>: temperature"
    EXPECT_EQ(arg.substr(arg.rfind(' ') + 1), "temperature") << arg;
  }
}

}  // namespace
}  // namespace divcheck::gputest

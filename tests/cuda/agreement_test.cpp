// The CUDA backend against the float128 reference (judge(): tolerance bound, exact zeros,
// NaN/inf agreement) and against the CPU backend, for every row of issue 3 and every input
// dtype: small cases (V = 5..8) and rows longer than the 1024 lanes (V = 1025, 4099).
// tvd_prob is bitwise equal to the CPU backend (same order, only exact IEEE operations).
#include <iostream>

#include "tests/cpu/test_cases.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "tests/cuda/gpu_test_support.hpp"

namespace divcheck::gputest {
namespace {

class GpuAgreement : public GpuTest {
 protected:
  // Judges the GPU result, compares it with the CPU backend's, and keeps the tally.
  void check(const Case& c) {
    SCOPED_TRACE(label(c));
    const Expected e = compute_reference(c);
    const Outputs og = compute(gpu(), c);
    const Outputs oc = compute(cpu(), c);
    EXPECT_TRUE(gpu_passes(og, c, e));
    const Agreement a = compare_backends(c, og, oc, e);
    EXPECT_EQ(a.first_problem, "");
    if (c.id == DivergenceId::tvd_prob) {
      EXPECT_TRUE(bitwise_same(og, oc));
    }
    elements_ += a.elements;
    bitwise_ += a.bitwise_equal;
    worst_ = std::max(worst_, a.worst);
  }
  void TearDown() override {
    if (elements_ > 0)
      std::cout << "[ agreement ] " << bitwise_ << " of " << elements_
                << " output elements bitwise equal to the cpu backend; worst distance " << worst_
                << " of the two verdict bounds\n";
  }

 private:
  std::int64_t elements_ = 0, bitwise_ = 0;
  double worst_ = 0.0;
};

TEST_F(GpuAgreement, SmallCasesEveryRowEveryDtype) {
  for (DivergenceId id : gpu_rows())
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (std::uint64_t seed = 0; seed < 4; ++seed) {
        Case c = divcheck::testing::random_case(id, dt, seed);
        divcheck::testing::want_all_grads(c, seed == 3 ? -2.5 : 0.75);
        check(c);
      }
}

TEST_F(GpuAgreement, RowsLongerThanTheLanes) {
  for (DivergenceId id : gpu_rows())
    for (DType dt : {DType::f32, DType::bf16})
      for (std::int64_t V : {1025, 4099}) check(varied_case(id, dt, 2, 2, V, static_cast<std::uint64_t>(V) + 3));
}

TEST_F(GpuAgreement, EveryParameterPath) {
  // Seeds 0..5 cover: log_target both ways, capped and uncapped cross-entropy, reduction
  // "none" and "mean", every tvd_prob reduction.
  for (DivergenceId id : gpu_rows())
    for (std::uint64_t seed = 0; seed < 6; ++seed) check(varied_case(id, DType::f32, 2, 3, 300, seed));
}

TEST_F(GpuAgreement, OnlyOneGradientWanted) {
  for (DivergenceId id : gpu_rows()) {
    const DivergenceInfo& d = info(id);
    for (const auto& role : d.roles) {
      if (!role.differentiable) continue;
      Case c = varied_case(id, DType::bf16, 2, 2, 1500, 11);
      c.wants_grad = {std::string(role.name)};
      check(c);
    }
    Case none = varied_case(id, DType::f32, 2, 2, 700, 12);
    none.wants_grad.clear();  // loss only
    check(none);
  }
}

}  // namespace
}  // namespace divcheck::gputest

// The condition scales must bound the error of a real float32 implementation. A plain float32
// evaluation of docs/semantics.md's formulas (float32_model.hpp; its sums are accumulated in
// double, so the verdict's summation term sigma is not needed) must satisfy
//   |y - r| <= c * u * scale + jump + 2^-149        (c = the registry constant, u = 2^-24)
// on every element, across input families that stress the error model: peaked rows (tiny
// probabilities, large |lp|), near-identical rows (cancellation, TV near-ties), -inf columns,
// huge logits, extreme temperatures, bf16 inputs, dcor with strongly and weakly related samples.
// Exact zeros must come out exactly 0, and the worst ratio is printed so that bounds can be
// tightened over time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "reference/reference.hpp"
#include "tests/cpu/test_cases.hpp"
#include "tests/reference/case_builders.hpp"
#include "tests/reference/float32_model.hpp"

namespace divcheck {
namespace {

using testing_ref::Float32Outputs;
using testing_ref::RandomOptions;
using testing_ref::random_case;
using testing_ref::set_reduction;

struct Worst {
  double ratio = 0.0;
  std::string where;
};

void check_tensor(const ExpectedTensor& e, const std::vector<float>& got, double c, const std::string& what, Worst& worst) {
  ASSERT_EQ(e.value.size(), got.size()) << what;
  const double u = std::ldexp(1.0, -24), floor = std::ldexp(1.0, -149);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double r = e.value[i], y = got[i];
    if (std::isnan(r)) {
      EXPECT_TRUE(std::isnan(y)) << what << "[" << i << "]";
      continue;
    }
    if (std::isinf(r) || std::fabs(r) > 3.4e38) {
      EXPECT_TRUE(std::isinf(y) && (y > 0) == (r > 0)) << what << "[" << i << "] ref " << r << " got " << y;
      continue;
    }
    if (e.exact_zero[i]) {
      EXPECT_EQ(y, 0.0) << what << "[" << i << "] must be exactly 0";
      continue;
    }
    const double bound = c * u * e.scale[i] + e.jump[i] + floor;
    const double ratio = std::fabs(y - r) / bound;
    if (ratio > worst.ratio) worst = {ratio, what + "[" + std::to_string(i) + "]"};
    EXPECT_LE(std::fabs(y - r), bound) << what << "[" << i << "]: ref " << r << " float32 " << y << " scale "
                                       << e.scale[i] << " jump " << e.jump[i];
  }
}

void check_case(const Case& c, const Float32Outputs& got, Worst& worst) {
  const Expected e = compute_reference(c);
  const ToleranceSpec& tol = info(c.id).tolerance;
  const std::string name(name_of(c.id));
  check_tensor(e.loss, got.loss, tol.loss_c, name + " loss", worst);
  for (const auto& [role, g] : e.grads) check_tensor(g, got.grads.at(role), tol.grad_c, name + " " + role, worst);
}

// Logit-row families.
std::vector<Case> logit_family_cases(DivergenceId id) {
  std::vector<Case> out;
  std::uint64_t seed = 100;
  for (double scale : {1.0, 8.0, 40.0}) {  // flat, typical, peaked
    RandomOptions o;
    o.V = 300;
    o.T = 3;
    o.logit_scale = scale;
    out.push_back(random_case(id, ++seed, o));
  }
  {  // near-identical rows: q = p perturbed in the last bits (cancellation; TV near-ties)
    RandomOptions o;
    o.V = 200;
    Case c = random_case(id, ++seed, o);
    const std::string p_role(info(id).roles[1].name), q_role(info(id).roles[0].name);
    Tensor& a = c.inputs[info(id).roles[0].name.data()];
    const Tensor& b = c.inputs[info(id).roles[1].name.data()];
    for (std::int64_t i = 0; i < a.numel(); ++i)
      if (!std::isnan(b.get(i))) a.set(i, i % 3 == 0 ? b.get(i) : b.get(i) * (1.0 + 3e-7 * ((i % 7) - 3)));
    out.push_back(c);
  }
  {  // -inf columns on both sides and one-sided, huge logits, bf16
    RandomOptions o;
    o.V = 64;
    o.dtype = DType::bf16;
    Case c = random_case(id, ++seed, o);
    for (auto& [name, t] : c.inputs) {
      if (info(id).role(name)->kind != RoleKind::logits) continue;
      for (std::int64_t pos = 0; pos < 6; ++pos) {
        if (std::isnan(t.get(pos * 64))) continue;
        t.set(pos * 64 + 1, -std::numeric_limits<double>::infinity());
        if (pos == 2) t.set(pos * 64 + 5, 1e30);
        if (pos == 3) t.set(pos * 64 + 6, -1e30);
      }
    }
    out.push_back(c);
  }
  return out;
}

TEST(ReferenceScaleSoundness, LogitRowsAgainstFloat32Evaluation) {
  for (DivergenceId id : divcheck::testing::logit_rows()) {
    Worst worst;
    const bool temperature_row = id == DivergenceId::temperature_scaled_masked_kl_divergence ||
                                 id == DivergenceId::temperature_scaled_masked_jefferys_divergence;
    for (Case& c : logit_family_cases(id)) {
      check_case(c, testing_ref::float32_logit_row(c), worst);
      if (info(id).role("support_mask")) {
        set_reduction(c, "none");
        check_case(c, testing_ref::float32_logit_row(c), worst);
      }
      if (temperature_row) {
        for (double t : {0.05, 0.7, 20.0}) {
          c.params.temperature = t;
          check_case(c, testing_ref::float32_logit_row(c), worst);
        }
      }
    }
    std::printf("[ scale ] %-46s worst |error| / bound = %.3g at %s\n", std::string(name_of(id)).c_str(), worst.ratio,
                worst.where.c_str());
  }
}

TEST(ReferenceScaleSoundness, CappedCrossEntropy) {
  Worst worst;
  for (Case& c : logit_family_cases(DivergenceId::masked_cross_entropy)) {
    for (double m : {0.25, 3.0}) {
      c.params.max_loss = m;
      c.params.scaling_factor = 1.7;
      check_case(c, testing_ref::float32_logit_row(c), worst);
    }
  }
  std::printf("[ scale ] capped cross-entropy worst |error| / bound = %.3g at %s\n", worst.ratio, worst.where.c_str());
}

TEST(ReferenceScaleSoundness, TvdProbAgainstFloat32Evaluation) {
  Worst worst;
  for (const char* red : {"batchmean", "sum", "mean", "none"}) {
    RandomOptions o;
    o.V = 500;
    o.N = 5;
    Case c = random_case(DivergenceId::tvd_prob, 200, o);
    set_reduction(c, red);
    check_case(c, testing_ref::float32_tvd_prob(c), worst);
  }
  std::printf("[ scale ] tvd_prob worst |error| / bound = %.3g at %s\n", worst.ratio, worst.where.c_str());
}

TEST(ReferenceScaleSoundness, FusedLinearAgainstFloat32Evaluation) {
  Worst worst;
  std::uint64_t seed = 400;
  for (double beta : {0.0, 1.0}) {
    for (double temp : {1.0, 0.3, 4.0}) {
      for (const char* red : {"sequence_mean", "token_mean"}) {
        RandomOptions o;
        o.V = 200;
        o.H = 16;
        Case c = random_case(DivergenceId::fused_linear_masked_kl_divergence, ++seed, o);
        c.params.jsd_beta = beta;
        c.params.temperature = temp;
        set_reduction(c, red);
        check_case(c, testing_ref::float32_fused_linear(c), worst);
      }
    }
  }
  std::printf("[ scale ] fused_linear worst |error| / bound = %.3g at %s\n", worst.ratio, worst.where.c_str());
}

TEST(ReferenceScaleSoundness, DcorAgainstFloat32Evaluation) {
  Worst worst;
  for (std::uint64_t seed = 300; seed < 306; ++seed) {
    RandomOptions o;
    o.T = 12;  // 22 valid samples
    o.D1 = 4;
    o.D2 = 3;
    Case c = random_case(DivergenceId::masked_unbiased_dcor, seed, o);
    if (seed % 2) {  // weakly related: replace samples_2 by fresh noise
      std::mt19937_64 rng(seed);
      std::normal_distribution<double> normal;
      Tensor& y = c.inputs["samples_2"];
      for (std::int64_t i = 0; i < y.numel(); ++i)
        if (!std::isnan(y.get(i))) y.set(i, normal(rng));
    }
    if (seed == 304) c.params.safety_factor = 0.0;
    check_case(c, testing_ref::float32_dcor(c), worst);
  }
  // X = Y: the ratio sits at (eps = 0) or just below (eps > 0) the clamp edge at 1.
  for (double safety : {0.0, 100.0}) {
    RandomOptions o;
    o.T = 12;
    o.D2 = o.D1;
    Case c = random_case(DivergenceId::masked_unbiased_dcor, 310, o);
    c.inputs["samples_2"] = c.inputs["samples_1"];
    c.params.safety_factor = safety;
    check_case(c, testing_ref::float32_dcor(c), worst);
  }
  std::printf("[ scale ] dcor worst |error| / bound = %.3g at %s\n", worst.ratio, worst.where.c_str());
}

}  // namespace
}  // namespace divcheck

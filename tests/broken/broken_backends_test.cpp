// Self-test of the broken backends: each is wrong on its trigger, in the way its catalogue
// entry says, and agrees with the CPU backend elsewhere (bitwise on the rows it does not
// break; within the float32 error bound on its own rows when the trigger is absent, since it
// computes those in double).
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "tests/broken/broken_backends.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

bool breaks(const BrokenBackendInfo& b, DivergenceId id) {
  for (auto d : b.breaks)
    if (d == id) return true;
  return false;
}

// |a - b| <= 2^-14 * max |b| per tensor: the float32 bound of tests/cpu/gradient_check_test.cpp
// (the broken rows are computed in double, so they sit within the CPU backend's own error).
void expect_close(const Outputs& a, const Outputs& b, const std::string& what) {
  auto close = [&](const Tensor& x, const Tensor& y, const std::string& name) {
    ASSERT_EQ(x.numel(), y.numel()) << what << " " << name;
    double m = 0;
    for (std::int64_t i = 0; i < y.numel(); ++i) m = std::max(m, std::fabs(y.get(i)));
    const double floor = is_floating(x.dtype()) && x.dtype() != DType::f32 ? unit_roundoff(x.dtype()) * m : 0.0;
    for (std::int64_t i = 0; i < y.numel(); ++i)
      EXPECT_NEAR(x.get(i), y.get(i), std::ldexp(m, -14) + floor + 1e-30) << what << " " << name << " " << i;
  };
  close(a.loss, b.loss, "loss");
  for (const auto& [role, g] : b.grads) close(a.grads.at(role), g, role);
}

Case unmasked(Case c) {
  for (auto& [name, t] : c.inputs)
    if (info(c.id).role(name)->kind == RoleKind::position_mask)
      for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, 1.0);
  return c;
}

TEST(BrokenBackends, CatalogueAndFactory) {
  auto all = make_broken_backends();
  ASSERT_EQ(all.size(), broken_backend_catalog().size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].first, broken_backend_catalog()[i].name);
    EXPECT_EQ(all[i].second->name(), all[i].first);
    EXPECT_EQ(make_broken_backend(all[i].first)->name(), all[i].first);
    EXPECT_FALSE(broken_backend_catalog()[i].breaks.empty());
  }
  EXPECT_THROW(make_broken_backend("no_such_bug"), InvalidArgument);
}

TEST(BrokenBackends, AgreeWithCpuAwayFromTheirTrigger) {
  auto cpu = make_cpu_backend();
  for (const auto& b : broken_backend_catalog()) {
    auto broken = make_broken_backend(b.name);
    for (DivergenceId id : all_rows())
      for (std::uint64_t seed : {1, 2, 3}) {
        // Trigger-free: no fully masked sequence, no ties (random values), T = 1 where the bug
        // is the temperature factor, every position valid where masked positions leak.
        Case c = random_case(id, DType::f32, seed);
        if (b.name == "wrong_temperature_factor") c.params.temperature = 1.0;
        if (b.name == "masked_position_leaks") c = unmasked(c);
        want_all_grads(c, 0.5);
        const Outputs want = compute(*cpu, c), got = compute(*broken, c);
        const std::string what = std::string(b.name) + " on " + std::string(name_of(id));
        if (!breaks(b, id)) {
          EXPECT_TRUE(got.loss.bitwise_equal(want.loss)) << what;
          for (const auto& [role, g] : want.grads) EXPECT_TRUE(got.grads.at(role).bitwise_equal(g)) << what << " " << role;
        } else {
          expect_close(got, want, what);
        }
      }
  }
}

TEST(BrokenBackends, TvdTwoWaySelectIsWrongExactlyAtTies) {
  auto broken = make_broken_backend("tvd_two_way_select");
  // The seed reproduction: p = q, batchmean over 8 rows: every element gets -0.5/8 = -0.0625.
  Case c;
  c.id = DivergenceId::tvd_prob;
  const auto p = softmax_rows(randn(8 * 512, 0), 8, 512);
  c.inputs["p"] = make_tensor(DType::f32, {8, 512}, p);
  c.inputs["q"] = c.inputs["p"];
  c.params.reduction = "batchmean";
  want_all_grads(c);
  const Outputs o = compute(*broken, c);
  EXPECT_EQ(o.loss.get(0), 0.0);
  for (std::int64_t i = 0; i < 8 * 512; ++i) ASSERT_EQ(o.grads.at("p").get(i), -0.0625) << i;
  // total_variation on identical rows with a support mask: the two-way sign is -1 everywhere in
  // the support, so the gradient p_v (s_v sigma_v - T_p)/2 is non-zero (the CPU backend's is 0).
  Case tv = random_case(DivergenceId::total_variation, DType::f32, 1);
  tv.inputs["clean_logits"] = tv.inputs["noisy_logits"];
  want_all_grads(tv);
  const Outputs otv = compute(*broken, tv);
  double max_abs = 0;
  for (const auto& [role, g] : otv.grads)
    for (std::int64_t i = 0; i < g.numel(); ++i) max_abs = std::max(max_abs, std::fabs(g.get(i)));
  EXPECT_GT(max_abs, 1e-3);
}

TEST(BrokenBackends, NanOnFullyMaskedSequence) {
  auto broken = make_broken_backend("nan_on_fully_masked");
  Case c = random_case(DivergenceId::masked_kl_divergence, DType::f32, 1);
  c.inputs["attention_mask"] = make_mask({2, 3}, {1, 1, 0, 0, 0, 0});
  want_all_grads(c);
  EXPECT_TRUE(std::isnan(compute(*broken, c).loss.get(0)));
  EXPECT_FALSE(std::isnan(compute(*make_cpu_backend(), c).loss.get(0)));
}

TEST(BrokenBackends, NoMaxSubtractionOverflowsAtLargeLogits) {
  auto broken = make_broken_backend("no_max_subtraction");
  Case c = logit_case(DivergenceId::masked_kl_divergence, 1, 1, 3, DType::f32, {1e4, 1e4 - 1, 0}, {1e4 - 2, 1e4, 0});
  want_all_grads(c);
  EXPECT_TRUE(std::isnan(compute(*broken, c).loss.get(0)));
  EXPECT_TRUE(std::isfinite(compute(*make_cpu_backend(), c).loss.get(0)));
}

TEST(BrokenBackends, WrongTemperatureFactorScalesGradientsByT) {
  auto broken = make_broken_backend("wrong_temperature_factor");
  Case c = random_case(DivergenceId::temperature_scaled_masked_kl_divergence, DType::f32, 2);
  c.params.temperature = 4.0;
  want_all_grads(c);
  const Outputs got = compute(*broken, c), want = compute(*make_cpu_backend(), c);
  EXPECT_NEAR(got.loss.get(0), want.loss.get(0), 1e-6);
  const Tensor& g = got.grads.at("student_logits");
  const Tensor& w = want.grads.at("student_logits");
  for (std::int64_t i = 0; i < g.numel(); ++i) EXPECT_NEAR(g.get(i), 4.0 * w.get(i), 1e-5 + 1e-4 * std::fabs(g.get(i))) << i;
}

TEST(BrokenBackends, MaskedPositionsLeak) {
  auto broken = make_broken_backend("masked_position_leaks");
  Case c = random_case(DivergenceId::masked_kl_divergence, DType::f32, 1);  // mask 1 0 1 / 1 1 0
  want_all_grads(c);
  const Outputs got = compute(*broken, c), want = compute(*make_cpu_backend(), c);
  EXPECT_GT(std::fabs(got.loss.get(0) - want.loss.get(0)), 1e-3);
  const Tensor& g = got.grads.at("input_logits");
  const std::int64_t V = g.dim(2);
  double masked = 0;
  for (std::int64_t v = 0; v < V; ++v) masked = std::max(masked, std::fabs(g.get(1 * V + v)));  // position (0, 1)
  EXPECT_GT(masked, 0.0);
  c.inputs["input_logits"].set(1 * V, NAN);  // garbage at a masked position
  EXPECT_TRUE(std::isnan(compute(*broken, c).loss.get(0)));
}

}  // namespace
}  // namespace divcheck::testing

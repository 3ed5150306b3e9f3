// Masked positions are inert (SPEC.md): garbage there (NaN, +-inf, huge values) changes neither
// the loss nor any gradient, bitwise, and the gradient at a masked position is exactly +0.
// A fully masked sequence contributes 0 (never NaN); an all-masked batch gives exactly 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/backend.hpp"
#include "tests/cpu/double_model.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

const double kGarbage[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY, 3e38, -65504.0, 1e30};

// The (B, T) mask tensor of a case's positions, or the row mask of tvd_prob (labels).
const Tensor* position_mask(const Case& c) {
  for (const auto& r : info(c.id).roles)
    if (r.kind == RoleKind::position_mask) return c.input(std::string(r.name));
  return nullptr;
}

// Overwrite every masked position of every per-position floating role with garbage.
Case with_garbage(const Case& c) {
  Case g = c;
  const Tensor* mask = position_mask(c);
  const Tensor* labels = c.input("labels");
  for (auto& [name, t] : g.inputs) {
    const RoleSpec* r = info(c.id).role(name);
    if (!is_floating(t.dtype()) || r->kind == RoleKind::weight) continue;
    const std::int64_t positions = c.id == DivergenceId::tvd_prob ? t.dim(0) : t.dim(0) * t.dim(1);
    const std::int64_t inner = t.numel() / positions;
    for (std::int64_t pos = 0; pos < positions; ++pos) {
      const bool masked = labels ? labels->get(pos) == -100 : (mask && !mask->nonzero(pos));
      if (!masked) continue;
      for (std::int64_t k = 0; k < inner; ++k) t.set(pos * inner + k, kGarbage[(pos + k) % 6]);
    }
  }
  return g;
}

void expect_bitwise_equal(const Outputs& a, const Outputs& b, const std::string& what) {
  EXPECT_TRUE(a.loss.bitwise_equal(b.loss)) << what << " loss " << a.loss.get(0) << " vs " << b.loss.get(0);
  for (const auto& [role, g] : a.grads) EXPECT_TRUE(g.bitwise_equal(b.grads.at(role))) << what << " grad " << role;
}

TEST(CpuMasking, GarbageAtMaskedPositionsChangesNothing) {
  for (DivergenceId id : all_rows())
    for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
      Case c = random_case(id, dt, 5);
      ASSERT_TRUE(position_mask(c) || c.input("labels")) << name_of(id) << ": the random case has no mask";
      want_all_grads(c, 0.9);
      const Case g = with_garbage(c);
      auto cpu = make_cpu_backend();
      const Outputs clean = compute(*cpu, c), dirty = compute(*cpu, g);
      const std::string what = std::string(name_of(id)) + " " + std::string(short_name(dt));
      expect_bitwise_equal(clean, dirty, what);
      EXPECT_FALSE(std::isnan(dirty.loss.get(0))) << what;
      // Masked positions' gradients are exactly +0.
      const Tensor* mask = position_mask(c);
      const Tensor* labels = c.input("labels");
      for (const auto& [role, t] : dirty.grads) {
        if (info(id).role(role)->kind == RoleKind::weight) continue;
        const std::int64_t positions = id == DivergenceId::tvd_prob ? t.dim(0) : t.dim(0) * t.dim(1);
        const std::int64_t inner = t.numel() / positions;
        for (std::int64_t pos = 0; pos < positions; ++pos) {
          const bool masked = labels ? labels->get(pos) == -100 : !mask->nonzero(pos);
          if (!masked) continue;
          for (std::int64_t k = 0; k < inner; ++k) {
            const double v = t.get(pos * inner + k);
            EXPECT_TRUE(v == 0.0 && !std::signbit(v)) << what << " " << role << " masked position " << pos << " = " << v;
          }
        }
      }
    }
}

// Mask every position of sequence b of a (B, T) position mask.
void mask_sequence(Case& c, std::int64_t b) {
  for (auto& r : info(c.id).roles) {
    if (r.kind != RoleKind::position_mask) continue;
    auto it = c.inputs.find(std::string(r.name));
    const std::int64_t B = c.inputs.at(std::string(info(c.id).roles.front().name)).dim(0);
    const std::int64_t T = c.inputs.at(std::string(info(c.id).roles.front().name)).dim(1);
    if (it == c.inputs.end()) c.inputs[std::string(r.name)] = ones_mask({B, T});
    Tensor& m = c.inputs[std::string(r.name)];
    for (std::int64_t t = 0; t < T; ++t) m.set(b * T + t, 0.0);
  }
}

TEST(CpuMasking, FullyMaskedSequenceContributesZero) {
  for (DivergenceId id : all_rows()) {
    if (id == DivergenceId::tvd_prob || id == DivergenceId::masked_unbiased_dcor) continue;  // no sequences
    for (std::uint64_t seed : {2, 3}) {  // seed 3: reduction "none" where the row has it
    Case c = random_case(id, DType::f32, seed);
    mask_sequence(c, 1);
    want_all_grads(c);
    const Outputs o = compute(*make_cpu_backend(), c);
    std::vector<double> scale;
    const std::vector<double> model = model_loss(c, role_values(c), &scale);
    for (std::int64_t i = 0; i < o.loss.numel(); ++i) {
      EXPECT_TRUE(std::isfinite(o.loss.get(i))) << name_of(id);
      // The model gives s_b = 0 for n_b = 0 (SPEC.md); the float result is within 2^-14 of it
      // relative to the model's error scale (the bound derived in gradient_check_test.cpp).
      const auto k = static_cast<std::size_t>(i);
      EXPECT_NEAR(o.loss.get(i), model[k], std::ldexp(scale[k], -14)) << name_of(id);
    }
    if (o.loss.numel() > 1) {
      EXPECT_EQ(o.loss.get(1), 0.0) << name_of(id) << ": reduction none, the masked sequence";
    }
    // Gradients of the masked sequence are exactly +0, the others finite.
    for (const auto& [role, g] : o.grads) {
      if (info(id).role(role)->kind == RoleKind::weight) continue;
      const std::int64_t per_seq = g.numel() / g.dim(0);
      for (std::int64_t i = 0; i < g.numel(); ++i) {
        if (i / per_seq == 1) EXPECT_TRUE(g.get(i) == 0.0 && !std::signbit(g.get(i))) << name_of(id) << " " << role;
        else EXPECT_TRUE(std::isfinite(g.get(i))) << name_of(id) << " " << role;
      }
    }
    }
  }
}

TEST(CpuMasking, AllMaskedBatchIsExactlyZero) {
  for (DivergenceId id : all_rows()) {
    Case c = random_case(id, DType::f32, 4);
    if (id == DivergenceId::tvd_prob) {
      for (std::int64_t i = 0; i < 4; ++i) c.inputs["labels"].set(i, -100.0);
    } else if (id == DivergenceId::masked_unbiased_dcor) {
      c.inputs["attention_mask"] = make_mask({2, 4}, std::vector<int>(8, 0));
    } else {
      mask_sequence(c, 0);
      mask_sequence(c, 1);
    }
    want_all_grads(c);
    const Outputs o = compute(*make_cpu_backend(), c);
    for (std::int64_t i = 0; i < o.loss.numel(); ++i) {
      EXPECT_EQ(o.loss.get(i), 0.0) << name_of(id);
      EXPECT_FALSE(std::signbit(o.loss.get(i))) << name_of(id);
    }
    for (const auto& [role, g] : o.grads)
      for (std::int64_t i = 0; i < g.numel(); ++i) {
        EXPECT_EQ(g.get(i), 0.0) << name_of(id) << " " << role;
        EXPECT_FALSE(std::signbit(g.get(i))) << name_of(id) << " " << role;
      }
  }
}

}  // namespace
}  // namespace divcheck::testing

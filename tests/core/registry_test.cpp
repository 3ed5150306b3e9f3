// The registry against SPEC.md: 12 rows in DivergenceId order, unique names, each row's roles
// (names, dims, optional, differentiable, side), parameters and reductions as SPEC.md states
// them. The expected table below is a transcription of SPEC.md's "The divergences" section.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/registry.hpp"

namespace divcheck {
namespace {

struct ExpectedRole {
  const char* name;
  RoleKind kind;
  std::vector<std::string> dims;
  bool optional;
  bool differentiable;
  Side side;
};
struct ExpectedRow {
  DivergenceId id;
  const char* name;
  std::vector<ExpectedRole> roles;
  std::vector<ParamKind> params;
  std::vector<std::string> reductions;  // empty: no reduction parameter
  const char* default_reduction;
  bool default_log_target;
};

using K = RoleKind;
using P = ParamKind;
const std::vector<std::string> kBTV = {"B", "T", "V"}, kBT = {"B", "T"};

// SPEC.md: `(input_logits, target_logits, attention_mask=None, ...)`: p = target, q = input.
std::vector<ExpectedRole> masked_roles() {
  return {{"input_logits", K::logits, kBTV, false, true, Side::q},
          {"target_logits", K::logits, kBTV, false, true, Side::p},
          {"attention_mask", K::position_mask, kBT, true, false, Side::none}};
}
// SPEC.md: `attention_mask, support_mask=None, reduction="mean"`: p = clean, q = noisy.
std::vector<ExpectedRole> support_roles() {
  return {{"noisy_logits", K::logits, kBTV, false, true, Side::q},
          {"clean_logits", K::logits, kBTV, false, true, Side::p},
          {"attention_mask", K::position_mask, kBT, false, false, Side::none},
          {"support_mask", K::support_mask, kBTV, true, false, Side::none}};
}
// SPEC.md: `position_mask, temperature=1.0`: t = teacher (p), s = student (q); gradients to both.
std::vector<ExpectedRole> temperature_roles() {
  return {{"teacher_logits", K::logits, kBTV, false, true, Side::p},
          {"student_logits", K::logits, kBTV, false, true, Side::q},
          {"position_mask", K::position_mask, kBT, false, false, Side::none}};
}

std::vector<ExpectedRow> spec_table() {
  return {
      {DivergenceId::masked_kl_divergence, "masked_kl_divergence", masked_roles(), {P::log_target}, {}, "mean", true},
      {DivergenceId::masked_jefferys_divergence, "masked_jefferys_divergence", masked_roles(), {P::log_target}, {},
       "mean", false},
      {DivergenceId::masked_cross_entropy, "masked_cross_entropy", masked_roles(), {P::max_loss, P::scaling_factor},
       {}, "mean", true},
      {DivergenceId::jefferys_divergence, "jefferys_divergence", support_roles(), {P::reduction}, {"mean", "none"},
       "mean", true},
      {DivergenceId::jensen_shannon_divergence, "jensen_shannon_divergence", support_roles(), {P::reduction},
       {"mean", "none"}, "mean", true},
      {DivergenceId::squared_hellinger_distance, "squared_hellinger_distance", support_roles(), {P::reduction},
       {"mean", "none"}, "mean", true},
      {DivergenceId::total_variation, "total_variation", support_roles(), {P::reduction}, {"mean", "none"}, "mean",
       true},
      {DivergenceId::temperature_scaled_masked_kl_divergence, "temperature_scaled_masked_kl_divergence",
       temperature_roles(), {P::temperature}, {}, "token_mean", true},
      {DivergenceId::temperature_scaled_masked_jefferys_divergence, "temperature_scaled_masked_jefferys_divergence",
       temperature_roles(), {P::temperature}, {}, "token_mean", true},
      // SPEC.md: (student_hidden (B,T,H), teacher_hidden (B,T,H), lm_head_weight (V,H), attention_mask=None, *,
      // jsd_beta, temperature=1.0, reduction="sequence_mean", chunk_size=1024); teacher detached.
      {DivergenceId::fused_linear_masked_kl_divergence, "fused_linear_masked_kl_divergence",
       {{"student_hidden", K::hidden, {"B", "T", "H"}, false, true, Side::q},
        {"teacher_hidden", K::hidden, {"B", "T", "H"}, false, false, Side::p},
        {"lm_head_weight", K::weight, {"V", "H"}, false, true, Side::none},
        {"attention_mask", K::position_mask, kBT, true, false, Side::none}},
       {P::jsd_beta, P::temperature, P::reduction, P::chunk_size},
       {"sequence_mean", "token_mean"},
       "sequence_mean",
       true},
      // SPEC.md: (samples_1 (B,T,D1), samples_2 (B,T,D2), attention_mask, safety_factor=100.0); both grads.
      {DivergenceId::masked_unbiased_dcor, "masked_unbiased_dcor",
       {{"samples_1", K::samples, {"B", "T", "D1"}, false, true, Side::none},
        {"samples_2", K::samples, {"B", "T", "D2"}, false, true, Side::none},
        {"attention_mask", K::position_mask, kBT, false, false, Side::none}},
       {P::safety_factor},
       {},
       "mean",
       true},
      // SPEC.md: p, q (N, V); labels (N,) optional; reduction in {none, sum, mean, batchmean};
      // gradient to p only.
      {DivergenceId::tvd_prob, "tvd_prob",
       {{"p", K::probabilities, {"N", "V"}, false, true, Side::p},
        {"q", K::probabilities, {"N", "V"}, false, false, Side::q},
        {"labels", K::labels, {"N"}, true, false, Side::none}},
       {P::reduction},
       {"none", "sum", "mean", "batchmean"},
       "batchmean",
       true},
  };
}

TEST(Registry, TwelveRowsInIdOrderWithUniqueNames) {
  const auto& r = registry();
  ASSERT_EQ(r.size(), kNumDivergences);
  ASSERT_EQ(kNumDivergences, 12u);
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(r[i].id), i);
    EXPECT_TRUE(names.insert(r[i].name).second) << r[i].name;
    EXPECT_EQ(&info(r[i].id), &r[i]);
    EXPECT_EQ(find_divergence(r[i].name), &r[i]);
    EXPECT_EQ(name_of(r[i].id), r[i].name);
    EXPECT_FALSE(r[i].summary.empty());
  }
  EXPECT_EQ(find_divergence("kl"), nullptr);
  EXPECT_EQ(find_divergence(""), nullptr);
}

TEST(Registry, RowsMatchSpec) {
  const auto table = spec_table();
  ASSERT_EQ(table.size(), kNumDivergences);
  for (const auto& want : table) {
    const DivergenceInfo& d = info(want.id);
    SCOPED_TRACE(want.name);
    EXPECT_EQ(d.name, want.name);
    ASSERT_EQ(d.roles.size(), want.roles.size());
    for (std::size_t i = 0; i < want.roles.size(); ++i) {
      const auto& wr = want.roles[i];
      const RoleSpec* r = d.role(wr.name);
      ASSERT_NE(r, nullptr) << wr.name;
      SCOPED_TRACE(wr.name);
      EXPECT_EQ(r->kind, wr.kind);
      std::vector<std::string> dims;
      for (auto s : r->dims)
        if (!s.empty()) dims.emplace_back(s);
      EXPECT_EQ(dims, wr.dims);
      // Unused dims come last: a rank-k role uses dims[0..k).
      for (std::size_t k = dims.size(); k < r->dims.size(); ++k) EXPECT_TRUE(r->dims[k].empty());
      EXPECT_EQ(r->optional, wr.optional);
      EXPECT_EQ(r->differentiable, wr.differentiable);
      EXPECT_EQ(r->side, wr.side);
    }
    std::set<ParamKind> params(d.params.begin(), d.params.end()), want_params(want.params.begin(), want.params.end());
    EXPECT_EQ(params, want_params);
    EXPECT_EQ(params.size(), d.params.size()) << "a parameter is listed twice";
    std::set<std::string> reds, want_reds(want.reductions.begin(), want.reductions.end());
    for (auto s : d.reductions) reds.emplace(s);
    EXPECT_EQ(reds, want_reds);
    EXPECT_EQ(d.default_reduction, want.default_reduction);
    EXPECT_EQ(d.default_log_target, want.default_log_target);
  }
}

TEST(Registry, ReductionParameterAndDefaults) {
  for (const auto& d : registry()) {
    SCOPED_TRACE(std::string(d.name));
    bool has_reduction = false;
    for (auto p : d.params) has_reduction |= (p == ParamKind::reduction);
    EXPECT_EQ(has_reduction, !d.reductions.empty());
    if (!d.reductions.empty()) {
      bool found = false;
      for (auto r : d.reductions) found |= (r == d.default_reduction);
      EXPECT_TRUE(found) << "default_reduction " << d.default_reduction << " not among the reductions";
    }
    EXPECT_FALSE(d.default_reduction.empty());
    // Every differentiable role is required, so a wanted gradient always has its tensor.
    for (const auto& r : d.roles) {
      if (r.differentiable) {
        EXPECT_FALSE(r.optional) << r.name;
      }
    }
    // Masks and labels are never differentiable.
    for (const auto& r : d.roles) {
      if (r.kind == RoleKind::position_mask || r.kind == RoleKind::support_mask || r.kind == RoleKind::labels) {
        EXPECT_FALSE(r.differentiable) << r.name;
      }
    }
    EXPECT_GT(d.tolerance.loss_c, 0.0);
    EXPECT_GT(d.tolerance.grad_c, 0.0);
    EXPECT_FALSE(d.bench_shapes.empty());
  }
}

TEST(Registry, ParamNames) {
  EXPECT_EQ(param_name(ParamKind::log_target), "log_target");
  EXPECT_EQ(param_name(ParamKind::max_loss), "max_loss");
  EXPECT_EQ(param_name(ParamKind::scaling_factor), "scaling_factor");
  EXPECT_EQ(param_name(ParamKind::temperature), "temperature");
  EXPECT_EQ(param_name(ParamKind::reduction), "reduction");
  EXPECT_EQ(param_name(ParamKind::jsd_beta), "jsd_beta");
  EXPECT_EQ(param_name(ParamKind::chunk_size), "chunk_size");
  EXPECT_EQ(param_name(ParamKind::safety_factor), "safety_factor");
}

// Declared properties that SPEC.md states outright.
TEST(Registry, DeclaredBoundsAndSymmetry) {
  const double ln2 = std::log(2.0);
  EXPECT_EQ(info(DivergenceId::total_variation).props.upper_bound, 1.0);
  EXPECT_EQ(info(DivergenceId::squared_hellinger_distance).props.upper_bound, 1.0);
  EXPECT_EQ(info(DivergenceId::jensen_shannon_divergence).props.upper_bound, ln2);
  EXPECT_EQ(info(DivergenceId::masked_unbiased_dcor).props.upper_bound, 1.0);
  EXPECT_EQ(info(DivergenceId::tvd_prob).props.upper_bound, 1.0);
  EXPECT_FALSE(info(DivergenceId::masked_kl_divergence).props.symmetric);
  EXPECT_TRUE(info(DivergenceId::masked_jefferys_divergence).props.symmetric);
  EXPECT_FALSE(info(DivergenceId::masked_cross_entropy).props.zero_on_identical);
  EXPECT_TRUE(info(DivergenceId::masked_kl_divergence).props.has_log_target);
  EXPECT_TRUE(info(DivergenceId::masked_jefferys_divergence).props.has_log_target);
  for (auto id : {DivergenceId::jefferys_divergence, DivergenceId::jensen_shannon_divergence,
                  DivergenceId::squared_hellinger_distance, DivergenceId::total_variation})
    EXPECT_TRUE(info(id).props.has_reduction_none) << name_of(id);
}

}  // namespace
}  // namespace divcheck

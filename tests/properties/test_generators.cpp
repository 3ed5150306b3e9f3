// Tests of the case generators: the family tables, validity of every generated case (and of its
// shrinks), determinism of draw_case, dtype coverage of every family, the structure each family
// promises (identical rows are bitwise identical, NaN rows are valid positions, padding never
// fills a row, ...), and the rare large vocabularies.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "kernels/math/softmax.hpp"
#include "properties/generators.hpp"

namespace divcheck {
namespace {

constexpr int kDraws = 36;  // per (row, family)

std::vector<Case> draw_many(DivergenceId id, std::string_view family, int n, std::uint64_t seed0 = 1000) {
  std::vector<Case> out;
  for (int k = 0; k < n; ++k) out.push_back(draw_case(id, family, seed0 + k, k * 100 / n).value());
  return out;
}

// The float dtype of a case (every float role shares it).
DType float_dtype(const Case& c) {
  for (const auto& r : info(c.id).roles)
    if (r.kind != RoleKind::position_mask && r.kind != RoleKind::support_mask && r.kind != RoleKind::labels)
      if (const Tensor* t = c.input(std::string(r.name))) return t->dtype();
  return DType::f64;
}

bool same_case(const Case& a, const Case& b) {
  if (a.id != b.id || !(a.params == b.params) || a.wants_grad != b.wants_grad || a.inputs.size() != b.inputs.size())
    return false;
  for (const auto& [k, t] : a.inputs) {
    const Tensor* u = b.input(k);
    if (!u || !t.bitwise_equal(*u)) return false;
  }
  return a.grad_output.bitwise_equal(b.grad_output) && a.provenance.family == b.provenance.family;
}

std::string row_family(DivergenceId id, std::string_view f) { return std::string(name_of(id)) + "/" + std::string(f); }

TEST(Families, EveryRowHasNamedDescribedUniqueFamilies) {
  for (const auto& d : registry()) {
    const auto& fs = families(d.id);
    ASSERT_GE(fs.size(), 8u) << d.name;
    std::set<std::string_view> names;
    for (const auto& f : fs) {
      EXPECT_FALSE(f.what.empty()) << d.name << "/" << f.name;
      EXPECT_TRUE(names.insert(f.name).second) << "duplicate family " << f.name << " in " << d.name;
    }
  }
}

TEST(Families, RowSpecificFamiliesOnlyWhereTheyApply) {
  auto has = [](DivergenceId id, std::string_view name) {
    for (const auto& f : families(id))
      if (f.name == name) return true;
    return false;
  };
  for (const auto& d : registry()) {
    const bool logit_row = d.roles.front().kind == RoleKind::logits;
    bool temp = false, support = d.role("support_mask") != nullptr;
    for (auto p : d.params) temp |= p == ParamKind::temperature;
    if (logit_row) {
      for (auto f : {"random_logits", "identical_rows", "partial_ties", "padded_vocab", "fully_masked", "masked_garbage",
                     "extreme_logits", "near_one_hot", "narrow_dtypes", "nan_rows", "upstream_grads"})
        EXPECT_TRUE(has(d.id, f)) << d.name << " lacks " << f;
      EXPECT_EQ(has(d.id, "temperature_extremes"), temp) << d.name;
      EXPECT_EQ(has(d.id, "support_masks"), support) << d.name;
      EXPECT_EQ(has(d.id, "log_target"), d.props.has_log_target) << d.name;
      EXPECT_EQ(has(d.id, "max_loss"), d.id == DivergenceId::masked_cross_entropy) << d.name;
      EXPECT_EQ(has(d.id, "reductions"), !d.reductions.empty()) << d.name;
    }
  }
  EXPECT_TRUE(has(DivergenceId::fused_linear_masked_kl_divergence, "chunk_remainders"));
  EXPECT_TRUE(has(DivergenceId::fused_linear_masked_kl_divergence, "identical_hidden"));
  EXPECT_TRUE(has(DivergenceId::fused_linear_masked_kl_divergence, "temperature_extremes"));
  for (auto f : {"duplicate_rows", "constant_samples", "n_below_4", "n_equals_4", "y_equals_x", "rotated_scaled", "masked_garbage"})
    EXPECT_TRUE(has(DivergenceId::masked_unbiased_dcor, f)) << f;
  for (auto f : {"exact_ties", "partial_ties", "padded_zeros", "ignored_labels", "reductions"})
    EXPECT_TRUE(has(DivergenceId::tvd_prob, f)) << f;
}

TEST(Families, UnknownFamilyIsAnInvalidArgumentNamingIt) {
  try {
    gen_case(DivergenceId::tvd_prob, "no_such_family");
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "family");
    EXPECT_NE(std::string(e.what()).find("no_such_family"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("exact_ties"), std::string::npos);  // lists the known ones
  }
}

TEST(Families, BadArgumentsAreInvalidArguments) {
  EXPECT_THROW(draw_case(DivergenceId::tvd_prob, "exact_ties", 1, -1), InvalidArgument);
  EXPECT_THROW(families(static_cast<DivergenceId>(200)), InvalidArgument);
  EXPECT_THROW(gen_case(static_cast<DivergenceId>(12), "random_logits"), InvalidArgument);
}

TEST(Generators, EveryCaseValidTaggedAndEveryDtypeAppears) {
  for (const auto& d : registry()) {
    // Loss-only cases: the logit rows and tvd_prob draw some (their CUDA forward-only launch is
    // a path of its own), fused-linear and dcor none.
    const bool loss_only_drawn = d.id != DivergenceId::fused_linear_masked_kl_divergence &&
                                 d.id != DivergenceId::masked_unbiased_dcor;
    std::int64_t loss_only = 0, with_grads = 0;
    for (const auto& f : families(d.id)) {
      std::set<DType> dtypes;
      std::set<std::string> reductions;
      for (const Case& c : draw_many(d.id, f.name, kDraws)) {
        EXPECT_NO_THROW(validate_case(c)) << row_family(d.id, f.name);
        EXPECT_EQ(c.provenance.family, f.name);
        (c.wants_grad.empty() ? loss_only : with_grads) += 1;
        dtypes.insert(float_dtype(c));
        reductions.insert(c.params.reduction);
      }
      if (f.name == "narrow_dtypes") {
        EXPECT_EQ(dtypes, (std::set<DType>{DType::bf16, DType::f16})) << row_family(d.id, f.name);
      } else {
        EXPECT_EQ(dtypes, (std::set<DType>{DType::f32, DType::bf16, DType::f16})) << row_family(d.id, f.name);
      }
      if (f.name == "reductions") {
        EXPECT_EQ(reductions.size(), d.reductions.size()) << row_family(d.id, f.name);
      }
    }
    std::cout << "[ mix ] " << d.name << ": " << loss_only << " loss-only cases, " << with_grads
              << " with gradients\n";
    if (loss_only_drawn) {
      EXPECT_GT(loss_only, 0) << d.name;
    } else {
      EXPECT_EQ(loss_only, 0) << d.name;
    }
    EXPECT_GT(with_grads, 4 * loss_only) << d.name << ": most cases ask for gradients";
  }
}

TEST(Generators, DrawCaseIsDeterministic) {
  for (const auto& d : registry())
    for (const auto& f : families(d.id))
      for (int size : {0, 37, 100}) {
        Case a = draw_case(d.id, f.name, 77, size).value();
        Case b = draw_case(d.id, f.name, 77, size).value();
        EXPECT_TRUE(same_case(a, b)) << row_family(d.id, f.name) << " size " << size;
        EXPECT_EQ(a.provenance.seed, 77u);
      }
}

TEST(Generators, ShrinksAreValidCases) {
  for (const auto& d : registry())
    for (const auto& f : families(d.id)) {
      rc::Shrinkable<Case> s = draw_case(d.id, f.name, 5, 60);
      auto shrinks = s.shrinks();
      int k = 0;
      for (auto x = shrinks.next(); x && k < 12; x = shrinks.next(), ++k) {
        Case c = x->value();
        EXPECT_NO_THROW(validate_case(c)) << row_family(d.id, f.name) << " shrink " << k;
        EXPECT_EQ(c.provenance.family, f.name);
        EXPECT_EQ(c.provenance.seed, 5u);
      }
    }
}

TEST(Generators, SmallSizesGiveSmallCases) {
  for (const auto& d : registry())
    for (const auto& f : families(d.id)) {
      Case c = draw_case(d.id, f.name, 3, 0).value();
      std::int64_t total = 0;
      for (const auto& [k, t] : c.inputs) total += t.numel();
      EXPECT_LE(total, 200) << row_family(d.id, f.name);
    }
}

// ---- structure promised by the families ---------------------------------------------------

std::vector<std::int64_t> valid_positions(const Case& c, const std::string& mask_role, std::int64_t rows) {
  std::vector<std::int64_t> v;
  const Tensor* m = c.input(mask_role);
  for (std::int64_t r = 0; r < rows; ++r)
    if (!m || m->nonzero(r)) v.push_back(r);
  return v;
}

TEST(LogitFamilies, IdenticalRowsAreBitwiseIdentical) {
  for (const auto& d : registry()) {
    if (d.roles.front().kind != RoleKind::logits) continue;
    for (const Case& c : draw_many(d.id, "identical_rows", kDraws)) {
      const Tensor& a = c.inputs.at(std::string(d.roles[0].name));
      const Tensor& b = c.inputs.at(std::string(d.roles[1].name));
      EXPECT_TRUE(a.bitwise_equal(b)) << d.name;
    }
  }
}

TEST(LogitFamilies, PaddingNeverFillsARowAndNanRowsAreValid) {
  for (const auto& d : registry()) {
    if (d.roles.front().kind != RoleKind::logits) continue;
    const std::string mask_role(d.roles[2].name);
    for (const char* fam : {"padded_vocab", "nan_rows", "extreme_logits", "log_target", "identical_rows"}) {
      bool applies = false;
      for (const auto& f : families(d.id)) applies |= f.name == fam;
      if (!applies) continue;
      for (const Case& c : draw_many(d.id, fam, kDraws)) {
        const Tensor& q = c.inputs.at(std::string(d.roles[0].name));
        const Tensor& p = c.inputs.at(std::string(d.roles[1].name));
        const std::int64_t rows = q.dim(0) * q.dim(1), V = q.dim(2);
        bool bad_valid_row = false;
        for (std::int64_t r = 0; r < rows; ++r) {
          bool q_finite = false, p_finite = false, non_finite = false;
          for (std::int64_t v = 0; v < V; ++v) {
            double a = q.get(r * V + v), b = p.get(r * V + v);
            q_finite |= std::isfinite(a);
            p_finite |= std::isfinite(b);
            non_finite |= std::isnan(a) || std::isnan(b) || a == INFINITY || b == INFINITY;
          }
          const bool bad = !q_finite || !p_finite || non_finite;
          if (std::string(fam) != "nan_rows") {
            EXPECT_FALSE(bad) << d.name << "/" << fam << " row " << r;
          } else if (bad) {
            const Tensor* m = c.input(mask_role);
            bad_valid_row |= !m || m->nonzero(r);
          }
        }
        if (std::string(fam) == "nan_rows") {
          EXPECT_TRUE(bad_valid_row) << d.name;
        }
      }
    }
  }
}

TEST(LogitFamilies, GarbageOnlyAtMaskedPositionsAndMasksReallyMask) {
  for (const auto& d : registry()) {
    if (d.roles.front().kind != RoleKind::logits) continue;
    const std::string mask_role(d.roles[2].name);
    for (const Case& c : draw_many(d.id, "masked_garbage", kDraws)) {
      const Tensor& q = c.inputs.at(std::string(d.roles[0].name));
      const Tensor* m = c.input(mask_role);
      ASSERT_NE(m, nullptr) << d.name;
      const std::int64_t rows = q.dim(0) * q.dim(1), V = q.dim(2);
      bool any_masked = false;
      for (std::int64_t r = 0; r < rows; ++r) {
        any_masked |= !m->nonzero(r);
        if (!m->nonzero(r)) continue;
        for (std::int64_t v = 0; v < V; ++v) {
          EXPECT_TRUE(std::isfinite(q.get(r * V + v))) << d.name;
        }
      }
      EXPECT_TRUE(any_masked) << d.name;
    }
    for (const Case& c : draw_many(d.id, "fully_masked", kDraws)) {
      const Tensor* m = c.input(mask_role);
      ASSERT_NE(m, nullptr);
      const std::int64_t B = m->dim(0), T = m->dim(1);
      std::int64_t valid = 0;
      bool dead_sequence = false;
      for (std::int64_t b = 0; b < B; ++b) {
        std::int64_t n = 0;
        for (std::int64_t t = 0; t < T; ++t) n += m->nonzero(b * T + t);
        dead_sequence |= n == 0;
        valid += n;
      }
      EXPECT_TRUE(dead_sequence || valid <= 1) << d.name;
    }
  }
}

TEST(LogitFamilies, TemperatureExtremesUseExtremeTemperatures) {
  for (auto id : {DivergenceId::temperature_scaled_masked_kl_divergence, DivergenceId::temperature_scaled_masked_jefferys_divergence})
    for (const Case& c : draw_many(id, "temperature_extremes", kDraws)) {
      const double T = c.params.temperature;
      EXPECT_TRUE(T <= 1e-2 || T >= 1e2) << T;
      const Tensor& x = c.inputs.at("student_logits");
      for (std::int64_t i = 0; i < x.numel(); ++i) EXPECT_LE(std::fabs(x.get(i) / T), 400.0);
    }
}

// The family reaches both forms of T != 1 in the CUDA kernels' plain path: the product by 1/T
// (plain_recip_t) and, at T = 9e37 (1/T below FLT_MIN; bf16 and f32 logits only), the division
// (plain_scaled_t).
TEST(LogitFamilies, TemperatureExtremesReachBothFormsOfT) {
  int by_reciprocal = 0, divided = 0;
  for (const Case& c : draw_many(DivergenceId::temperature_scaled_masked_kl_divergence, "temperature_extremes", kDraws)) {
    const auto t = static_cast<float>(c.params.temperature);
    if (math::reciprocal_temperature_is_normal(t)) ++by_reciprocal;
    else {
      ++divided;
      EXPECT_NE(c.inputs.at("student_logits").dtype(), DType::f16);
    }
  }
  EXPECT_GT(by_reciprocal, 0);
  EXPECT_GT(divided, 0);
}

// near_one_hot reaches its "hot column alone in the support" mode in every row with a support
// mask (the rows where the CPU gate found Hellinger's bound missing its second-order term), and
// only there; and the mode keeps p and q near 1 at that column (both sides' gap >= 30).
TEST(LogitFamilies, NearOneHotIsolatesTheHotColumnInTheSupport) {
  for (const auto& d : registry()) {
    if (!d.role("support_mask")) continue;
    int cases = 0;
    for (const Case& c : draw_many(d.id, "near_one_hot", 2 * kDraws)) cases += hot_column_alone_rows(c) > 0;
    EXPECT_GT(cases, 0) << name_of(d.id) << ": no near_one_hot case with the hot column alone in the support";
    std::cout << "[ near_one_hot ] " << name_of(d.id) << ": " << cases << " of " << 2 * kDraws
              << " cases with the hot column alone in the support\n";
  }
  for (const Case& c : draw_many(DivergenceId::masked_kl_divergence, "near_one_hot", 2 * kDraws))
    EXPECT_EQ(c.input("support_mask"), nullptr);  // a row without a support role: the old family
}

TEST(LogitFamilies, SupportMasksCoverAllModes) {
  bool all_zero = false, all_one = false;
  for (const Case& c : draw_many(DivergenceId::total_variation, "support_masks", 60)) {
    const Tensor* s = c.input("support_mask");
    ASSERT_NE(s, nullptr);
    std::int64_t kept = 0;
    for (std::int64_t i = 0; i < s->numel(); ++i) kept += s->nonzero(i);
    all_zero |= kept == 0;
    all_one |= kept == s->numel() && s->numel() > 1;
  }
  EXPECT_TRUE(all_zero);
  EXPECT_TRUE(all_one);
}

TEST(LogitFamilies, LargeVocabulariesAppearRarelyWithFewRows) {
  std::set<std::int64_t> large;
  int n = 0;
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    Case c = draw_case(DivergenceId::total_variation, "random_logits", seed, 100).value();
    const Tensor& x = c.inputs.at("noisy_logits");
    if (x.dim(2) >= 32000) {
      ++n;
      large.insert(x.dim(2));
      EXPECT_LE(x.dim(0) * x.dim(1), 2);
    }
    if (x.dim(2) >= 1000) {
      EXPECT_LE(x.dim(0) * x.dim(1), 4);
    }
  }
  EXPECT_GE(n, 1);
  EXPECT_LE(n, 30);
}

TEST(TvdFamilies, TiesIgnoredRowsAndGarbage) {
  for (const Case& c : draw_many(DivergenceId::tvd_prob, "exact_ties", kDraws)) {
    const Tensor& p = c.inputs.at("p");
    const Tensor& q = c.inputs.at("q");
    for (std::int64_t v = 0; v < p.dim(1); ++v) EXPECT_EQ(p.get(v), q.get(v));  // row 0 always ties
  }
  bool all_ignored = false;
  for (const Case& c : draw_many(DivergenceId::tvd_prob, "ignored_labels", kDraws)) {
    const Tensor* l = c.input("labels");
    ASSERT_NE(l, nullptr);
    std::int64_t ignored = 0;
    for (std::int64_t i = 0; i < l->numel(); ++i) {
      ignored += l->get(i) == -100;
      EXPECT_TRUE(l->get(i) == -100 || (l->get(i) >= 0 && l->get(i) < c.inputs.at("p").dim(1)));
    }
    all_ignored |= ignored == l->numel();
  }
  EXPECT_TRUE(all_ignored);
  for (const Case& c : draw_many(DivergenceId::tvd_prob, "masked_garbage", kDraws)) {
    const Tensor& p = c.inputs.at("p");
    const Tensor* l = c.input("labels");
    ASSERT_NE(l, nullptr);
    for (std::int64_t r = 0; r < p.dim(0); ++r)
      if (l->get(r) != -100) {
        for (std::int64_t v = 0; v < p.dim(1); ++v) {
          EXPECT_TRUE(std::isfinite(p.get(r * p.dim(1) + v)));
        }
      }
  }
}

TEST(DcorFamilies, ValidCountsAndEquality) {
  const auto id = DivergenceId::masked_unbiased_dcor;
  for (const Case& c : draw_many(id, "n_below_4", kDraws)) {
    const Tensor& m = c.inputs.at("attention_mask");
    EXPECT_LT(valid_positions(c, "attention_mask", m.numel()).size(), 4u);
  }
  for (const Case& c : draw_many(id, "n_equals_4", kDraws)) {
    const Tensor& m = c.inputs.at("attention_mask");
    EXPECT_EQ(valid_positions(c, "attention_mask", m.numel()).size(), 4u);
  }
  for (const Case& c : draw_many(id, "y_equals_x", kDraws)) EXPECT_TRUE(c.inputs.at("samples_1").bitwise_equal(c.inputs.at("samples_2")));
}

TEST(FusedFamilies, IdenticalHiddenAndChunkRemainders) {
  const auto id = DivergenceId::fused_linear_masked_kl_divergence;
  std::set<double> betas;
  std::set<std::string> reds;
  for (const Case& c : draw_many(id, "identical_hidden", kDraws)) {
    EXPECT_TRUE(c.inputs.at("student_hidden").bitwise_equal(c.inputs.at("teacher_hidden")));
    betas.insert(c.params.jsd_beta);
    reds.insert(c.params.reduction);
  }
  EXPECT_EQ(betas, (std::set<double>{0.0, 1.0}));
  EXPECT_EQ(reds, (std::set<std::string>{"sequence_mean", "token_mean"}));
  bool remainder = false;
  for (const Case& c : draw_many(id, "chunk_remainders", kDraws)) {
    const Tensor& h = c.inputs.at("student_hidden");
    const std::int64_t bt = h.dim(0) * h.dim(1), chunk = c.params.chunk_size;
    if (chunk > 1 && bt > chunk) {
      EXPECT_NE(bt % chunk, 0) << bt << " " << chunk;
    }
    remainder |= chunk > 1 && bt > chunk;
  }
  EXPECT_TRUE(remainder);
}

TEST(AnyCase, CoversEveryFamily) {
  for (const auto& d : registry()) {
    std::map<std::string, int> seen;
    const rc::Gen<Case> g = gen_any_case(d.id);
    for (int k = 0; k < 400; ++k) seen[g(rc::Random(k), 20).value().provenance.family]++;
    for (const auto& f : families(d.id)) EXPECT_GT(seen[std::string(f.name)], 0) << d.name << "/" << f.name;
  }
}

}  // namespace
}  // namespace divcheck

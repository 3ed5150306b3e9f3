// validate_case: a valid case of every row passes (every float dtype, every mask dtype, with and
// without optional roles, random parameters); then each error of SPEC.md / docs/semantics.md
// "Validation" on every row where it applies, asserting the exception type and that the message
// names the argument and the value.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/case.hpp"
#include "core/errors.hpp"
#include "tests/core/sample_cases.hpp"

namespace divcheck {
namespace {

using testing::sample_case;
using testing::SampleOptions;

// Expect validate_case to throw InvalidArgument whose argument is "<row>: <argument>" and whose
// message contains "<argument> = <value>".
void expect_rejected(const Case& c, const std::string& argument, const std::string& value) {
  const std::string row(name_of(c.id));
  try {
    validate_case(c);
    ADD_FAILURE() << row << ": accepted, expected rejection of " << argument << " = " << value;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), row + ": " + argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(argument + " = " + value), std::string::npos)
        << "message does not name " << argument << " = " << value << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << row << ": wrong exception type: " << e.what();
  }
}

// The same values converted to another dtype (each element rounded once).
Tensor converted(const Tensor& t, DType dt) {
  Tensor out(dt, t.shape());
  for (std::int64_t i = 0; i < t.numel(); ++i) out.set(i, t.get(i));
  return out;
}

bool is_float_kind(RoleKind k) {
  return k == RoleKind::logits || k == RoleKind::probabilities || k == RoleKind::hidden || k == RoleKind::weight ||
         k == RoleKind::samples;
}

TEST(ValidateCase, ValidCaseOfEveryRowPasses) {
  int checked = 0;
  for (const auto& d : registry()) {
    for (DType fdt : testing::kFloatDTypes) {
      for (std::size_t m = 0; m < std::size(testing::kMaskDTypes); ++m) {
        for (bool optional : {true, false}) {
          SampleOptions o;
          o.float_dtype = fdt;
          o.mask_dtype = testing::kMaskDTypes[m];
          o.label_dtype = testing::kLabelDTypes[m % std::size(testing::kLabelDTypes)];
          o.with_optional = optional;
          o.random_params = m % 2 == 1;
          o.all_grads = !optional || m % 3 != 0;
          Case c = sample_case(d.id, 100 + m, o);
          EXPECT_NO_THROW(validate_case(c)) << d.name << " " << short_name(fdt) << " " << short_name(o.mask_dtype);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 12 * 3 * 6 * 2);
}

TEST(ValidateCase, SizeOneDimensionsAreValid) {
  for (const auto& d : registry()) {
    SampleOptions o;
    o.B = o.T = o.V = o.N = o.H = o.D1 = o.D2 = 1;
    EXPECT_NO_THROW(validate_case(sample_case(d.id, 1, o))) << d.name;
  }
}

TEST(ValidateCase, UnknownReduction) {
  for (const auto& d : registry()) {
    Case c = sample_case(d.id, 1);
    if (d.accepts(ParamKind::reduction)) {
      c.params.reduction = "avg";
      expect_rejected(c, "reduction", "\"avg\"");
      c.params.reduction = "";
      expect_rejected(c, "reduction", "\"\"");
      for (auto r : d.reductions) {
        c.params.reduction = std::string(r);
        c.grad_output = Tensor(DType::f32, loss_shape(c));
        EXPECT_NO_THROW(validate_case(c)) << d.name << " " << r;
      }
    } else {
      // No reduction parameter: "" or the row's fixed reduction are accepted, anything else not.
      c.params.reduction = "sum";
      expect_rejected(c, "reduction", "\"sum\"");
      c.params.reduction = std::string(d.default_reduction);
      EXPECT_NO_THROW(validate_case(c)) << d.name;
    }
  }
}

TEST(ValidateCase, TemperatureMustBeFiniteAndPositive) {
  const double inf = std::numeric_limits<double>::infinity();
  int rows = 0;
  for (const auto& d : registry()) {
    Case c = sample_case(d.id, 2);
    if (!d.accepts(ParamKind::temperature)) {
      c.params.temperature = -1.0;  // not a parameter of this row: ignored
      EXPECT_NO_THROW(validate_case(c)) << d.name;
      continue;
    }
    ++rows;
    const std::pair<double, const char*> bad[] = {{0.0, "0"}, {-0.0, "-0"}, {-1.5, "-1.5"}, {std::nan(""), "nan"},
                                                  {inf, "inf"}, {-inf, "-inf"}};
    for (auto [v, text] : bad) {
      c.params.temperature = v;
      expect_rejected(c, "temperature", text);
    }
    c.params.temperature = 1e-30;
    EXPECT_NO_THROW(validate_case(c));
  }
  EXPECT_EQ(rows, 3);  // the two temperature-scaled rows and fused-linear
}

TEST(ValidateCase, JsdBetaMustBeZeroOrOne) {
  Case c = sample_case(DivergenceId::fused_linear_masked_kl_divergence, 3);
  for (auto [v, text] : {std::pair{0.5, "0.5"}, {-1.0, "-1"}, {std::nan(""), "nan"}, {2.0, "2"}}) {
    c.params.jsd_beta = v;
    expect_rejected(c, "jsd_beta", text);
  }
  for (double ok : {0.0, 1.0}) {
    c.params.jsd_beta = ok;
    EXPECT_NO_THROW(validate_case(c));
  }
}

TEST(ValidateCase, MaxLossAndScalingFactorMustBeFiniteAndPositive) {
  Case c = sample_case(DivergenceId::masked_cross_entropy, 4);
  for (auto [v, text] : {std::pair{0.0, "0"}, {-2.0, "-2"}, {std::nan(""), "nan"}, {HUGE_VAL, "inf"}}) {
    c.params.max_loss = v;
    expect_rejected(c, "max_loss", text);
  }
  c.params.max_loss.reset();
  EXPECT_NO_THROW(validate_case(c));
  c.params.max_loss = 10.0;
  EXPECT_NO_THROW(validate_case(c));
  for (auto [v, text] : {std::pair{0.0, "0"}, {-0.25, "-0.25"}, {std::nan(""), "nan"}, {HUGE_VAL, "inf"}}) {
    c.params.scaling_factor = v;
    expect_rejected(c, "scaling_factor", text);
  }
  // SPEC.md: scaling_factor has no effect when max_loss is None, but its domain is still checked.
  c.params.max_loss.reset();
  c.params.scaling_factor = 0.0;
  expect_rejected(c, "scaling_factor", "0");
}

TEST(ValidateCase, SafetyFactorMustBeFiniteAndNonNegative) {
  Case c = sample_case(DivergenceId::masked_unbiased_dcor, 5);
  for (auto [v, text] : {std::pair{-1.0, "-1"}, {-0.5, "-0.5"}, {std::nan(""), "nan"},
                         {HUGE_VAL, "inf"}}) {
    c.params.safety_factor = v;
    expect_rejected(c, "safety_factor", text);
  }
  c.params.safety_factor = 0.0;
  EXPECT_NO_THROW(validate_case(c));
}

TEST(ValidateCase, ChunkSizeMustBePositive) {
  Case c = sample_case(DivergenceId::fused_linear_masked_kl_divergence, 6);
  c.params.chunk_size = 0;
  expect_rejected(c, "chunk_size", "0");
  c.params.chunk_size = -5;
  expect_rejected(c, "chunk_size", "-5");
  c.params.chunk_size = 1;
  EXPECT_NO_THROW(validate_case(c));
}

TEST(ValidateCase, IgnoreIndexOtherThanMinus100) {
  Case c = sample_case(DivergenceId::tvd_prob, 7);
  c.params.ignore_index = -1;
  expect_rejected(c, "ignore_index", "-1");
}

// Every dimension of a role whose symbol an earlier role already fixed: changing it must be
// rejected naming that role (this covers logits of different shapes and masks of wrong shape).
TEST(ValidateCase, SharedDimensionMismatch) {
  int checked = 0;
  for (const auto& d : registry()) {
    for (std::size_t ri = 0; ri < d.roles.size(); ++ri) {
      const RoleSpec& r = d.roles[ri];
      for (std::size_t k = 0; k < r.dims.size() && !r.dims[k].empty(); ++k) {
        bool fixed_earlier = false;
        for (std::size_t e = 0; e < ri; ++e)
          for (auto s : d.roles[e].dims) fixed_earlier |= (!s.empty() && s == r.dims[k]);
        if (!fixed_earlier) continue;
        Case c = sample_case(d.id, 8);
        const Tensor& old = c.inputs.at(std::string(r.name));
        Shape s = old.shape();
        s[k] += 1;
        c.inputs[std::string(r.name)] = Tensor(old.dtype(), s);
        expect_rejected(c, std::string(r.name) + ".shape", shape_string(s));
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 30);
}

TEST(ValidateCase, WrongRankAndEmptyDimension) {
  for (const auto& d : registry()) {
    for (const auto& r : d.roles) {
      Case c = sample_case(d.id, 9);
      const Tensor& old = c.inputs.at(std::string(r.name));
      Shape s = old.shape();
      s.push_back(1);
      c.inputs[std::string(r.name)] = Tensor(old.dtype(), s);
      expect_rejected(c, std::string(r.name) + ".shape", shape_string(s));
      s.pop_back();
      s.back() = 0;
      c.inputs[std::string(r.name)] = Tensor(old.dtype(), s);
      expect_rejected(c, std::string(r.name) + ".shape", shape_string(s));
    }
  }
}

// Float roles must share one dtype: f32 vs bf16 (and every other pair) is rejected naming the
// later role.
TEST(ValidateCase, FloatDTypeMismatch) {
  for (const auto& d : registry()) {
    std::vector<std::string> floats;
    for (const auto& r : d.roles)
      if (is_float_kind(r.kind) && r.kind != RoleKind::samples) floats.emplace_back(r.name);
    if (floats.size() < 2) continue;  // dcor's two sample sets: see below
    for (auto [a, b] : {std::pair{DType::f32, DType::bf16}, {DType::bf16, DType::f16}, {DType::f16, DType::f32}}) {
      SampleOptions o;
      o.float_dtype = a;
      Case c = sample_case(d.id, 10, o);
      c.inputs[floats.back()] = converted(c.inputs.at(floats.back()), b);
      expect_rejected(c, floats.back() + ".dtype", std::string(short_name(b)));
    }
  }
}

// docs/semantics.md: "float roles share one dtype among f32/bf16/f16" -- dcor's two sample
// sets are float roles too (SPEC.md: a dtype mismatch raises an error).
TEST(ValidateCase, DcorSampleDTypeMismatch) {
  Case c = sample_case(DivergenceId::masked_unbiased_dcor, 10);
  c.inputs["samples_2"] = converted(c.inputs.at("samples_2"), DType::bf16);
  expect_rejected(c, "samples_2.dtype", "bf16");
}

// Float roles must be f32, bf16 or f16: f64 and integers are rejected.
TEST(ValidateCase, FloatRoleWithUnsupportedDType) {
  for (const auto& d : registry()) {
    for (const auto& r : d.roles) {
      if (!is_float_kind(r.kind)) continue;
      for (DType bad : {DType::f64, DType::i32, DType::boolean}) {
        Case c = sample_case(d.id, 11);
        c.inputs[std::string(r.name)] = converted(c.inputs.at(std::string(r.name)), bad);
        expect_rejected(c, std::string(r.name) + ".dtype", std::string(short_name(bad)));
      }
    }
  }
}

TEST(ValidateCase, FloatMaskAndFloatOrBoolLabelsRejected) {
  int masks = 0;
  for (const auto& d : registry()) {
    for (const auto& r : d.roles) {
      const bool mask = r.kind == RoleKind::position_mask || r.kind == RoleKind::support_mask;
      if (!mask && r.kind != RoleKind::labels) continue;
      std::vector<DType> bad = {DType::f32, DType::bf16, DType::f16, DType::f64};
      if (r.kind == RoleKind::labels) bad.push_back(DType::boolean);
      for (DType dt : bad) {
        Case c = sample_case(d.id, 12);
        c.inputs[std::string(r.name)] = converted(c.inputs.at(std::string(r.name)), dt);
        expect_rejected(c, std::string(r.name) + ".dtype", std::string(short_name(dt)));
      }
      masks += mask;
    }
  }
  EXPECT_EQ(masks, 3 + 4 * 2 + 2 + 1 + 1);  // 3 masked_*, 4 support rows x 2, 2 temperature, fused, dcor
}

TEST(ValidateCase, MissingRequiredTensor) {
  for (const auto& d : registry()) {
    for (const auto& r : d.roles) {
      Case c = sample_case(d.id, 13);
      c.inputs.erase(std::string(r.name));
      c.wants_grad.clear();
      if (r.optional) {
        EXPECT_NO_THROW(validate_case(c)) << d.name << " without " << r.name;
      } else {
        expect_rejected(c, std::string(r.name), "None");
      }
    }
  }
}

TEST(ValidateCase, UnknownTensor) {
  for (const auto& d : registry()) {
    Case c = sample_case(d.id, 14);
    c.inputs.emplace("logits", Tensor(DType::f32, {2, 3, 5}));
    expect_rejected(c, "logits", "<tensor>");
    // A role of another row is unknown here too.
    Case c2 = sample_case(d.id, 14);
    const char* foreign = d.role("lm_head_weight") ? "support_mask" : "lm_head_weight";
    if (d.role(foreign)) continue;
    c2.inputs.emplace(foreign, Tensor(DType::f32, {5, 3}));
    expect_rejected(c2, foreign, "<tensor>");
  }
}

TEST(ValidateCase, GradientOfNonDifferentiableRole) {
  int checked = 0;
  for (const auto& d : registry()) {
    for (const auto& r : d.roles) {
      if (r.differentiable) continue;
      Case c = sample_case(d.id, 15);
      c.wants_grad.emplace_back(r.name);
      expect_rejected(c, "wants_grad", std::string(r.name));
      ++checked;
    }
    Case c = sample_case(d.id, 15);
    c.wants_grad = {"nonexistent"};
    expect_rejected(c, "wants_grad", "nonexistent");
    Case twice = sample_case(d.id, 15);
    twice.wants_grad.push_back(twice.wants_grad.front());
    expect_rejected(twice, "wants_grad", twice.wants_grad.front());
  }
  // The two SPEC.md names: teacher_hidden (detached) and q of tvd_prob.
  Case fused = sample_case(DivergenceId::fused_linear_masked_kl_divergence, 16);
  fused.wants_grad = {"teacher_hidden"};
  expect_rejected(fused, "wants_grad", "teacher_hidden");
  Case tvd = sample_case(DivergenceId::tvd_prob, 16);
  tvd.wants_grad = {"q"};
  expect_rejected(tvd, "wants_grad", "q");
  EXPECT_GE(checked, 12);
}

TEST(ValidateCase, GradOutputShapeAndDType) {
  for (const auto& d : registry()) {
    for (auto red : d.reductions.empty() ? std::vector<std::string_view>{""} : d.reductions) {
      Case c = sample_case(d.id, 17);
      c.params.reduction = std::string(red);
      const Shape ls = loss_shape(c);
      c.grad_output = Tensor(DType::f32, ls);
      ASSERT_NO_THROW(validate_case(c));
      Shape wrong = ls;
      wrong.push_back(2);
      c.grad_output = Tensor(DType::f32, wrong);
      expect_rejected(c, "grad_output.shape", shape_string(wrong));
      c.grad_output = Tensor(DType::bf16, ls);
      expect_rejected(c, "grad_output.dtype", "bf16");
      c.grad_output = Tensor(DType::f64, ls);
      expect_rejected(c, "grad_output.dtype", "f64");
      // Without any wanted gradient grad_output is not used and not checked.
      c.wants_grad.clear();
      EXPECT_NO_THROW(validate_case(c));
    }
  }
}

TEST(ValidateCase, LossShape) {
  SampleOptions o;
  for (const auto& d : registry()) {
    for (auto red : d.reductions.empty() ? std::vector<std::string_view>{""} : d.reductions) {
      Case c = sample_case(d.id, 18, o);
      c.params.reduction = std::string(red);
      Shape want;
      if (red == "none") want = d.id == DivergenceId::tvd_prob ? Shape{o.N, o.V} : Shape{o.B};
      EXPECT_EQ(loss_shape(c), want) << d.name << " " << red;
    }
  }
}

}  // namespace
}  // namespace divcheck

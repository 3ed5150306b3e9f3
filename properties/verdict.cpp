// judge(): compares an implementation's Outputs with the reference's Expected element by
// element, under the tolerance model of properties/verdict.hpp and docs/tolerances.md, plus the
// structural rules of SPEC.md (exact zeros, NaN and inf agreement, overflow threshold).
#include "properties/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/errors.hpp"
#include "properties/mismatch_names.hpp"
#include "properties/tolerance_model.hpp"

namespace divcheck {

namespace {

constexpr double kU32 = 0x1p-24;  // unit roundoff of float32 arithmetic
constexpr std::size_t kKeepMismatches = 8;

// Unit roundoff of the final rounding to the output dtype: the dtype's own for bf16/f16;
// 2^-24 otherwise (float32 outputs; the reference value is a double that still needs rounding).
double output_rounding(DType dt) {
  return (dt == DType::bf16 || dt == DType::f16) ? unit_roundoff(dt) : kU32;
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// The reference tensor must be self-consistent before anything is read from it.
void check_expected(const ExpectedTensor& e, const std::string& name) {
  const std::size_t n = e.value.size();
  auto bad = [&](const std::string& field, std::size_t got) {
    throw InvalidArgument("expected." + name + "." + field, std::to_string(got) + " entries",
                          "must have one entry per value (" + std::to_string(n) + ")");
  };
  if (e.scale.size() != n) bad("scale", e.scale.size());
  if (e.jump.size() != n) bad("jump", e.jump.size());
  if (e.exact_zero.size() != n) bad("exact_zero", e.exact_zero.size());
  if (shape_numel(e.shape) != static_cast<std::int64_t>(n))
    throw InvalidArgument("expected." + name + ".shape", shape_string(e.shape),
                          "does not hold its " + std::to_string(n) + " values");
}

// Compares one output tensor; appends to `tv`.
void judge_tensor(const Tensor& got, const ExpectedTensor& exp, double c, double sigma, TensorVerdict& tv) {
  tv.total = exp.numel();
  if (got.empty_tensor()) {  // never written (a scalar has numel 1, so this is unambiguous)
    tv.wrong = tv.total;
    tv.first.push_back({-1, std::nan(""), std::nan(""), 0.0, MismatchKind::missing});
    return;
  }
  if (got.shape() != exp.shape || got.dtype() != exp.dtype || got.numel() != exp.numel()) {
    tv.wrong = tv.total;
    tv.first.push_back({-1, std::nan(""), std::nan(""), 0.0, MismatchKind::shape});
    return;
  }
  const double max_fin = max_finite(exp.dtype);
  const BoundInputs bi{c, sigma, exp.dtype};
  for (std::int64_t i = 0; i < exp.numel(); ++i) {
    const double y = got.get(i);
    const double r = exp.value[static_cast<std::size_t>(i)];
    MismatchKind kind = MismatchKind::none;
    double bound = 0.0;
    if (exp.exact_zero[static_cast<std::size_t>(i)]) {
      if (y != 0.0) kind = MismatchKind::not_exact_zero;  // NaN != 0 too
    } else if (std::isnan(r) || std::isnan(y)) {
      if (!(std::isnan(r) && std::isnan(y))) kind = MismatchKind::nan_mismatch;
    } else {
      bound = element_bound(bi, exp.scale[static_cast<std::size_t>(i)], exp.jump[static_cast<std::size_t>(i)], r);
      // Some value within the bound of r lies beyond the overflow threshold on the side of the
      // infinity y (so it rounds to y). An infinite reference has no such interval: its sign rules.
      const auto reaches_side_of = [&](double inf) {
        if (std::isinf(r)) return std::signbit(inf) == std::signbit(r);
        return std::signbit(inf) ? r - bound <= -max_fin : r + bound >= max_fin;
      };
      const bool ref_overflows = std::isinf(r) || std::fabs(r) > max_fin;
      if (ref_overflows) {
        if (std::isinf(y)) {
          if (!reaches_side_of(y)) kind = MismatchKind::inf_mismatch;
        } else {
          // A finite output is accepted only where the reference lies within the bound of the
          // overflow threshold (rounding could go either way), and the output is within bound.
          const double d = std::fabs(y - r);
          if (!(std::fabs(r) - bound <= max_fin && d <= bound)) kind = MismatchKind::inf_mismatch;
          else tv.worst_ratio = std::max(tv.worst_ratio, d / bound);
        }
      } else if (std::isinf(y)) {
        // Output overflowed although the reference is finite: accepted only where a value within
        // the bound of the reference lies beyond the overflow threshold on the output's side (it
        // rounds to that infinity). The bound may cross zero: an ill-conditioned element whose
        // reference is 0 and whose bound exceeds the dtype's range accepts either infinity (an f16
        // dcor gradient at a clamp's kink; docs/semantics.md, "Non-finite values" item 5).
        if (!reaches_side_of(y)) kind = MismatchKind::inf_mismatch;
      } else {
        const double d = std::fabs(y - r);
        const double ratio = d / bound;
        if (ratio > tv.worst_ratio) {
          tv.worst_ratio = ratio;
          tv.worst_index = i;
        }
        if (!(d <= bound)) kind = MismatchKind::out_of_bound;
      }
    }
    if (kind != MismatchKind::none) {
      ++tv.wrong;
      if (tv.first.size() < kKeepMismatches) tv.first.push_back({i, y, r, bound, kind});
    }
  }
}

}  // namespace

std::string_view mismatch_kind_name(MismatchKind k) {
  switch (k) {
    case MismatchKind::none: return "none";
    case MismatchKind::out_of_bound: return "out_of_bound";
    case MismatchKind::not_exact_zero: return "not_exact_zero";
    case MismatchKind::nan_mismatch: return "nan_mismatch";
    case MismatchKind::inf_mismatch: return "inf_mismatch";
    case MismatchKind::missing: return "missing";
    case MismatchKind::shape: return "shape";
  }
  return "?";
}

double summation_depth(std::int64_t n) {
  if (n <= 0) return 16.0;
  return static_cast<double>((n + 1023) / 1024) + 16.0;
}

double element_bound(const BoundInputs& b, double scale, double jump, double r) {
  return (b.c + b.sigma) * kU32 * scale + jump + output_rounding(b.out_dtype) * std::fabs(r) +
         min_subnormal(b.out_dtype);
}

Verdict judge(const Case& c, const Outputs& got, const Expected& expected) {
  validate_case(c);
  check_expected(expected.loss, "loss");
  for (const auto& [role, e] : expected.grads) check_expected(e, "grads." + role);
  const DivergenceInfo& d = info(c.id);
  const CaseSigmas sig = case_sigmas(c);
  Verdict v;

  TensorVerdict loss;
  loss.name = "loss";
  judge_tensor(got.loss, expected.loss, d.tolerance.loss_c, sig.loss, loss);
  v.tensors.push_back(std::move(loss));

  // Gradients: one per expected (= wanted) role. Gradients the backend wrote without being
  // asked are ignored (external result files may carry every gradient).
  for (const auto& [role, exp] : expected.grads) {
    TensorVerdict tv;
    tv.name = role;
    auto it = got.grads.find(role);
    auto sit = sig.grads.find(role);
    const double sigma = sit == sig.grads.end() ? 0.0 : sit->second;
    if (it == got.grads.end()) {
      tv.total = exp.numel();
      tv.wrong = tv.total;
      tv.first.push_back({-1, std::nan(""), std::nan(""), 0.0, MismatchKind::missing});
    } else {
      judge_tensor(it->second, exp, d.tolerance.grad_c, sigma, tv);
    }
    v.tensors.push_back(std::move(tv));
  }
  for (const auto& t : v.tensors) {
    v.pass = v.pass && t.wrong == 0;
    v.worst_ratio = std::max(v.worst_ratio, t.worst_ratio);
  }
  return v;
}

std::string Verdict::summary() const {
  std::ostringstream os;
  if (pass) {
    os << "PASS worst " << num(worst_ratio) << " of bound";
    return os.str();
  }
  os << "FAIL";
  bool first_tensor = true;
  for (const auto& t : tensors) {
    if (t.wrong == 0) continue;
    os << (first_tensor ? " " : "; ") << (t.name == "loss" ? "loss" : "grad " + t.name) << ": " << t.wrong << "/"
       << t.total << " wrong";
    first_tensor = false;
    if (!t.first.empty()) {
      const Mismatch& m = t.first.front();
      os << " (first: " << mismatch_kind_name(m.kind);
      if (m.index >= 0)
        os << " at [" << m.index << "] got " << num(m.got) << " expected " << num(m.expected) << " bound "
           << num(m.bound);
      os << ")";
    }
  }
  os << "; worst " << num(worst_ratio) << " of bound";
  return os.str();
}

}  // namespace divcheck

// compute_reference(): validate, evaluate in R (float128 or MPFR-50), round once (round-to-odd
// into double). The dispatch table is indexed by DivergenceId and must have one entry per row.
#include "reference/reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"
#include "reference/real_engine.hpp"

namespace divcheck {
namespace ref {

std::string effective_reduction(const Case& c) {
  const DivergenceInfo& d = info(c.id);
  return c.params.reduction.empty() ? std::string(d.default_reduction) : c.params.reduction;
}

double summation_depth_of(std::int64_t n) {
  return static_cast<double>((std::max<std::int64_t>(n, 0) + 1023) / 1024) + 16.0;
}

template <class R>
RealResult<R> evaluate_real(const RealInputs<R>& in) {
  using Fn = RealResult<R> (*)(const RealInputs<R>&);
  static constexpr std::array<Fn, 12> kTable = {
      &logit_divergence_real<R>,  // masked_kl_divergence
      &logit_divergence_real<R>,  // masked_jefferys_divergence
      &logit_divergence_real<R>,  // masked_cross_entropy
      &logit_divergence_real<R>,  // jefferys_divergence
      &logit_divergence_real<R>,  // jensen_shannon_divergence
      &logit_divergence_real<R>,  // squared_hellinger_distance
      &logit_divergence_real<R>,  // total_variation
      &logit_divergence_real<R>,  // temperature_scaled_masked_kl_divergence
      &logit_divergence_real<R>,  // temperature_scaled_masked_jefferys_divergence
      &fused_linear_real<R>,      // fused_linear_masked_kl_divergence
      &dcor_real<R>,              // masked_unbiased_dcor
      &tvd_prob_real<R>,          // tvd_prob
  };
  static_assert(kTable.size() == kNumDivergences, "one reference implementation per registry row");
  static_assert(static_cast<std::size_t>(DivergenceId::tvd_prob) == kNumDivergences - 1);
  return kTable[static_cast<std::size_t>(in.c->id)](in);
}

template RealResult<Float128> evaluate_real(const RealInputs<Float128>&);
template RealResult<Mpfr50> evaluate_real(const RealInputs<Mpfr50>&);

}  // namespace ref

namespace {

template <class R>
ExpectedTensor round_tensor(const ref::RealTensor<R>& t, DType dtype, const Shape& shape, const std::string& name) {
  ExpectedTensor e;
  e.dtype = dtype;
  e.shape = shape;
  const std::size_t n = t.value.size();
  if (static_cast<std::int64_t>(n) != shape_numel(shape))
    throw std::logic_error("reference: " + name + " has " + std::to_string(n) + " values for shape " +
                           shape_string(shape));
  e.value.resize(n);
  e.scale.resize(n);
  e.jump.resize(n);
  e.exact_zero.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const R& v = t.value[i];
    e.value[i] = ref::round_to_odd(v);
    // Structural zeros only (reference.hpp): a 0 whose running-error scale is also 0. A 0 with
    // a positive scale is 0 only in exact arithmetic (or by R's rounding); float32 may return
    // rounding noise there, which the bound judges.
    const bool ambiguous = i < t.ambiguous_zero.size() && t.ambiguous_zero[i];
    e.exact_zero[i] = (v == 0 && t.scale[i] == 0.0 && t.jump[i] == 0.0 && !ambiguous) ? 1 : 0;
    const bool finite = std::isfinite(e.value[i]);
    e.scale[i] = finite ? t.scale[i] : 0.0;
    e.jump[i] = finite ? t.jump[i] : 0.0;
    if (!(e.scale[i] >= 0.0 && std::isfinite(e.scale[i]) && e.jump[i] >= 0.0 && std::isfinite(e.jump[i])))
      throw std::logic_error("reference: " + name + "[" + std::to_string(i) + "] has scale " +
                             std::to_string(e.scale[i]) + ", jump " + std::to_string(e.jump[i]) +
                             " (a bug in the reference's error analysis)");
  }
  return e;
}

template <class R>
Expected compute_as(const Case& c) {
  ref::RealInputs<R> in(c);
  ref::RealResult<R> r = ref::evaluate_real<R>(in);
  Expected out;
  out.loss = round_tensor(r.loss, DType::f32, loss_shape(c), "loss");
  for (const std::string& role : c.wants_grad) {
    auto it = r.grads.find(role);
    if (it == r.grads.end()) throw std::logic_error("reference: no gradient computed for " + role);
    const Tensor* t = c.input(role);
    out.grads[role] = round_tensor(it->second, t->dtype(), t->shape(), "grad " + role);
  }
  return out;
}

}  // namespace

Expected compute_reference(const Case& c, Precision precision) {
  validate_case(c);
  switch (precision) {
    case Precision::float128: return compute_as<ref::Float128>(c);
    case Precision::mpfr50: return compute_as<ref::Mpfr50>(c);
  }
  throw InvalidArgument("precision", std::to_string(static_cast<int>(precision)), "unknown reference precision");
}

}  // namespace divcheck

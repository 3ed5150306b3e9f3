// Metamorphic shift invariance: adding a constant to a logit row (logit rows) or translating
// every sample by a constant vector (dcor) changes nothing. The case is first quantized per
// group (row or coordinate) onto a grid on which the shift is exact in the input dtype, so the
// two cases are exactly equivalent in real arithmetic; CPU outputs are then compared within the
// sum of the two cases' bounds. Offsets reach up to 2^(p-2) grid steps, and the grid is
// sometimes coarsened so that offsets of 128 or 16384 are exact: large offsets are the point (a
// kernel that forgets to subtract the row max overflows).
#include <cmath>

#include "properties/gen_primitives.hpp"
#include "relations/relations.hpp"
#include "support/property_support.hpp"
#include "support/tensor_ops.hpp"

namespace divcheck::props {

namespace {

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = t.get(i);
  return v;
}

// Quantizes each group of `t`, then (if shift) adds j_g * Q_g to group g. Groups: consecutive
// runs of `group_len` elements with stride 1 (logit rows), or strided columns (dcor).
struct Grouping {
  std::int64_t count, len, group_stride, elem_stride;
};

void quantize_and_shift(Tensor& base, Tensor& shifted, const Grouping& g, const std::vector<std::int64_t>& js, bool shift,
                        double big) {
  std::vector<double> v = values_of(base);
  const DType dt = base.dtype();
  std::vector<double> w = v;
  for (std::int64_t k = 0; k < g.count; ++k) {
    std::vector<std::size_t> idx;
    for (std::int64_t i = 0; i < g.len; ++i) idx.push_back(static_cast<std::size_t>(k * g.group_stride + i * g.elem_stride));
    const double q = quantize_group(v, idx, dt, big / std::ldexp(1.0, precision_bits(dt) - 2));
    for (auto i : idx) w[i] = v[i];
    if (!shift) continue;
    // j in [-2^(p-2), 2^(p-2)] keeps every shifted value exact; flip or drop it on overflow.
    const double lim = std::ldexp(1.0, precision_bits(dt) - 2);
    const double j = std::fmod(static_cast<double>(js[static_cast<std::size_t>(k)]), 2.0 * lim + 1.0) - lim;
    for (double c : {j * q, -j * q, 0.0}) {
      bool ok = true;
      for (auto i : idx) ok = ok && (!std::isfinite(v[i]) || std::fabs(v[i] + c) <= max_finite(dt));
      if (!ok) continue;
      for (auto i : idx) w[i] = std::isfinite(v[i]) ? v[i] + c : v[i];
      break;
    }
  }
  for (std::int64_t i = 0; i < base.numel(); ++i) {
    base.set(i, v[static_cast<std::size_t>(i)]);
    shifted.set(i, w[static_cast<std::size_t>(i)]);
    if (std::isfinite(w[static_cast<std::size_t>(i)]) && shifted.get(i) != w[static_cast<std::size_t>(i)])
      RC_FAIL("internal: shifted value not exact");
  }
}

}  // namespace

void shift_property(const Backend& backend, DivergenceId id) {
  Case c = *gen_case_of(id, [](std::string_view f) { return !is_nan_family(f); });
  tag_case(c);
  Case s = c;
  // Offsets: relative to the values only, or up to 128, or up to 16384 (whatever the values).
  const double big = *pgen::weighted<double>({{2, 0.0}, {1, 128.0}, {1, 16384.0}});
  RC_CLASSIFY(big > 0.0, "large offsets");
  if (id == DivergenceId::masked_unbiased_dcor) {
    for (const char* role : {"samples_1", "samples_2"}) {
      Tensor& t = c.inputs.at(role);
      const std::int64_t rows = t.dim(0) * t.dim(1), D = t.dim(2);
      const auto js = *rc::gen::container<std::vector<std::int64_t>>(static_cast<std::size_t>(D), pgen::int_toward(0, 1 << 20, 0));
      const bool shift = *rc::gen::arbitrary<bool>();
      quantize_and_shift(t, s.inputs.at(role), {D, rows, 1, D}, js, shift, big);
    }
  } else {
    const DivergenceInfo& d = info(id);
    const auto which = *pgen::int_toward(0, 2, 0);  // 0: q side, 1: p side, 2: both
    for (const auto& r : d.roles) {
      if (r.kind != RoleKind::logits) continue;
      Tensor& t = c.inputs.at(std::string(r.name));
      const std::int64_t rows = t.dim(0) * t.dim(1), V = t.dim(2);
      const auto js = *rc::gen::container<std::vector<std::int64_t>>(static_cast<std::size_t>(rows), pgen::int_toward(0, 1 << 20, 0));
      const bool shift = which == 2 || (which == 0) == (r.side == Side::q);
      quantize_and_shift(t, s.inputs.at(std::string(r.name)), {rows, V, V, 1}, js, shift, big);
    }
  }
  validate_case(c);
  const Outputs oc = compute(backend, c), os = compute(backend, s);
  const Bounds bc = bounds_of(c, reference_of(c)), bs = bounds_of(s, reference_of(s));
  assert_empty(compare_within(os.loss, oc.loss, add_bounds(bc.loss, bs.loss), "loss"), c);
  for (const auto& role : c.wants_grad)
    assert_empty(compare_within(os.grads.at(role), oc.grads.at(role), add_bounds(bc.grads.at(role), bs.grads.at(role)), "grad " + role), c);
}

}  // namespace divcheck::props

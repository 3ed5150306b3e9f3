// Case families of masked_unbiased_dcor: samples X (B, T, D1) and Y (B, T, D2) selected by an
// attention mask. Random samples, duplicated and constant samples, fewer than 4 and exactly 4
// valid samples, Y == X, Y a rotated and scaled X, garbage at masked positions, narrow dtypes,
// NaN/inf in a valid sample, upstream gradients.
#include <algorithm>
#include <cmath>
#include <limits>

#include "properties/case_builder.hpp"
#include "properties/family_table.hpp"
#include "properties/float_gen.hpp"
#include "properties/gen_primitives.hpp"

namespace divcheck::pgen {

namespace {

struct DcorDraft {
  std::int64_t B = 1, T = 1, D1 = 1, D2 = 1;
  DType dt = DType::f32;
  std::vector<double> x, y;  // B*T*D1, B*T*D2
  DType mask_dt = DType::boolean;
  std::vector<std::int64_t> mask;
  Params params;
  GradStyle grad_style = GradStyle::usual;
  std::int64_t rows() const { return B * T; }
  std::vector<std::int64_t> valid_rows() const {
    std::vector<std::int64_t> r;
    for (std::int64_t i = 0; i < rows(); ++i)
      if (mask[static_cast<std::size_t>(i)] != 0) r.push_back(i);
    return r;
  }
};

DcorDraft draw_dcor_layout(std::int64_t min_rows = 1, bool narrow_only = false) {
  DcorDraft f;
  f.B = *sized_int(1, 4);
  f.T = *sized_int(1, 16);
  while (f.B * f.T < min_rows) ++f.T;
  f.D1 = *sized_int(1, 16);
  f.D2 = *sized_int(1, 16);
  f.dt = narrow_only ? *gen_narrow_dtype() : *gen_float_dtype();
  return f;
}

void draw_samples(DcorDraft& f, double scale) {
  f.x = draw_values(static_cast<std::size_t>(f.rows() * f.D1), logit_dist(scale), f.dt);
  f.y = draw_values(static_cast<std::size_t>(f.rows() * f.D2), logit_dist(scale), f.dt);
}

void draw_dcor_params(DcorDraft& f) {
  // epsilon = safety_factor * 2^-23 inside every distance; 100 is the default.
  f.params.safety_factor = *weighted<double>({{6, 100.0}, {1, 1.0}, {1, 1000.0}, {1, 0.01}});
}

void draw_dcor_mask(DcorDraft& f, int valid_num = 5, int valid_den = 6) {
  f.mask_dt = *gen_mask_dtype();
  f.mask = draw_mask(static_cast<std::size_t>(f.rows()), f.mask_dt, valid_num, valid_den);
}

// Exactly `n` valid positions (n <= rows), chosen at random.
void set_valid_count(DcorDraft& f, std::int64_t n) {
  const std::int64_t valid = draw_valid_value(f.mask_dt);
  std::fill(f.mask.begin(), f.mask.end(), 0);
  std::int64_t placed = 0;
  while (placed < n) {
    const std::int64_t r = *int_toward(0, f.rows() - 1, 0);
    std::int64_t k = r;
    while (f.mask[static_cast<std::size_t>(k)] != 0) k = (k + 1) % f.rows();
    f.mask[static_cast<std::size_t>(k)] = valid;
    ++placed;
  }
}

Case finish(const DivergenceInfo& d, DcorDraft&& f, std::string_view family) {
  Case c;
  c.id = d.id;
  c.params = f.params;
  c.inputs["samples_1"] = float_tensor(f.dt, {f.B, f.T, f.D1}, f.x);
  c.inputs["samples_2"] = float_tensor(f.dt, {f.B, f.T, f.D2}, f.y);
  c.inputs["attention_mask"] = int_tensor(f.mask_dt, {f.B, f.T}, f.mask);
  c.wants_grad = draw_wants(d);
  c.grad_output = draw_grad_output(loss_shape(c), f.grad_style);
  c.provenance.family = std::string(family);
  validate_case(c);
  return c;
}

Case random_samples(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout();
  draw_samples(f, *one_of_values<double>({1.0, 0.1, 10.0}));
  draw_dcor_params(f);
  draw_dcor_mask(f);
  return finish(d, std::move(f), "random_samples");
}

Case duplicate_rows(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout(2);
  draw_samples(f, 1.0);
  draw_dcor_params(f);
  draw_dcor_mask(f);
  const std::int64_t copies = *int_toward(1, std::max<std::int64_t>(1, f.rows() / 2), 1);
  for (std::int64_t k = 0; k < copies; ++k) {
    const std::int64_t from = *int_toward(0, f.rows() - 1, 0);
    const std::int64_t to = *int_toward(0, f.rows() - 1, f.rows() - 1);
    const std::int64_t which = *int_toward(0, 2, 0);  // 0: both X and Y; 1: X only; 2: Y only
    if (which != 2)
      std::copy_n(f.x.begin() + from * f.D1, f.D1, f.x.begin() + to * f.D1);
    if (which != 1)
      std::copy_n(f.y.begin() + from * f.D2, f.D2, f.y.begin() + to * f.D2);
  }
  return finish(d, std::move(f), "duplicate_rows");
}

Case constant_samples(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout(4);
  draw_samples(f, 1.0);
  draw_dcor_params(f);
  draw_dcor_mask(f);
  const std::int64_t which = *int_toward(0, 2, 0);  // 0: X constant; 1: Y constant; 2: both
  for (std::int64_t r = 1; r < f.rows(); ++r) {
    if (which != 1) std::copy_n(f.x.begin(), f.D1, f.x.begin() + r * f.D1);
    if (which != 0) std::copy_n(f.y.begin(), f.D2, f.y.begin() + r * f.D2);
  }
  return finish(d, std::move(f), "constant_samples");
}

Case n_below_4(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout();
  draw_samples(f, 1.0);
  draw_dcor_params(f);
  draw_dcor_mask(f);
  set_valid_count(f, std::min<std::int64_t>(f.rows(), *int_toward(0, 3, 3)));
  return finish(d, std::move(f), "n_below_4");
}

Case n_equals_4(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout(4);
  draw_samples(f, 1.0);
  draw_dcor_params(f);
  draw_dcor_mask(f);
  set_valid_count(f, 4);
  return finish(d, std::move(f), "n_equals_4");
}

Case y_equals_x(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout();
  f.D2 = f.D1;
  draw_samples(f, *one_of_values<double>({1.0, 0.1, 10.0}));
  f.y = f.x;
  draw_dcor_params(f);
  draw_dcor_mask(f);
  return finish(d, std::move(f), "y_equals_x");
}

Case rotated_scaled(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout(4);
  f.D2 = f.D1;
  draw_samples(f, 1.0);
  draw_dcor_params(f);
  draw_dcor_mask(f);
  // Y = c X R. R: a signed permutation (exact) or a product of Givens rotations by random
  // angles (rounded); c: a power of two (exact) or not.
  const bool exact_r = *chance(1, 2);
  const double c = *one_of_values<double>({2.0, 0.5, 1.0, 3.0, 0.3});
  const std::int64_t D = f.D1;
  std::vector<double> R(static_cast<std::size_t>(D * D), 0.0);
  if (exact_r) {
    std::vector<std::int64_t> perm(static_cast<std::size_t>(D));
    for (std::int64_t i = 0; i < D; ++i) perm[static_cast<std::size_t>(i)] = i;
    for (std::int64_t i = D - 1; i > 0; --i) std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(*int_toward(0, i, i))]);
    for (std::int64_t i = 0; i < D; ++i)
      R[static_cast<std::size_t>(i * D + perm[static_cast<std::size_t>(i)])] = *chance(1, 2) ? -1.0 : 1.0;
  } else {
    for (std::int64_t i = 0; i < D; ++i) R[static_cast<std::size_t>(i * D + i)] = 1.0;
    for (std::int64_t i = 0; i + 1 < D; ++i) {
      const double a = static_cast<double>(*int_toward(0, 1 << 16, 0)) * (2.0 * M_PI / 65536.0);
      const double cs = std::cos(a), sn = std::sin(a);
      for (std::int64_t r = 0; r < D; ++r) {  // R <- R G(i, i+1, a)
        double& u = R[static_cast<std::size_t>(r * D + i)];
        double& v = R[static_cast<std::size_t>(r * D + i + 1)];
        const double nu = cs * u - sn * v, nv = sn * u + cs * v;
        u = nu;
        v = nv;
      }
    }
  }
  for (std::int64_t n = 0; n < f.rows(); ++n)
    for (std::int64_t j = 0; j < D; ++j) {
      double s = 0.0;
      for (std::int64_t k = 0; k < D; ++k) s += f.x[static_cast<std::size_t>(n * D + k)] * R[static_cast<std::size_t>(k * D + j)];
      f.y[static_cast<std::size_t>(n * D + j)] = round_to_dtype(c * s, f.dt);
    }
  return finish(d, std::move(f), "rotated_scaled");
}

Case masked_garbage(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout(2);
  draw_samples(f, 1.0);
  draw_dcor_params(f);
  draw_dcor_mask(f, 2, 3);
  f.mask[static_cast<std::size_t>(*int_toward(0, f.rows() - 1, 0))] = 0;
  const auto gx = draw_values(f.x.size(), garbage_dist(), f.dt);
  const auto gy = draw_values(f.y.size(), garbage_dist(), f.dt);
  for (std::int64_t r = 0; r < f.rows(); ++r) {
    if (f.mask[static_cast<std::size_t>(r)] != 0) continue;
    for (std::int64_t k = 0; k < f.D1; ++k) f.x[static_cast<std::size_t>(r * f.D1 + k)] = gx[static_cast<std::size_t>(r * f.D1 + k)];
    for (std::int64_t k = 0; k < f.D2; ++k) f.y[static_cast<std::size_t>(r * f.D2 + k)] = gy[static_cast<std::size_t>(r * f.D2 + k)];
  }
  return finish(d, std::move(f), "masked_garbage");
}

Case narrow_dtypes(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout(1, true);
  draw_samples(f, *one_of_values<double>({1.0, 10.0}));
  draw_dcor_params(f);
  draw_dcor_mask(f);
  return finish(d, std::move(f), "narrow_dtypes");
}

Case nan_samples(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout(4);
  draw_samples(f, 1.0);
  draw_dcor_params(f);
  draw_dcor_mask(f);
  const std::int64_t r = *int_toward(0, f.rows() - 1, 0);
  if (f.mask[static_cast<std::size_t>(r)] == 0) f.mask[static_cast<std::size_t>(r)] = draw_valid_value(f.mask_dt);
  const double bad = *one_of_values<double>({nan_value(), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()});
  if (*chance(1, 2))
    f.x[static_cast<std::size_t>(r * f.D1 + *int_toward(0, f.D1 - 1, 0))] = bad;
  else
    f.y[static_cast<std::size_t>(r * f.D2 + *int_toward(0, f.D2 - 1, 0))] = bad;
  return finish(d, std::move(f), "nan_samples");
}

Case upstream_grads(const DivergenceInfo& d) {
  DcorDraft f = draw_dcor_layout(4);
  draw_samples(f, 1.0);
  draw_dcor_params(f);
  draw_dcor_mask(f);
  f.grad_style = GradStyle::unusual;
  return finish(d, std::move(f), "upstream_grads");
}


}  // namespace

std::vector<FamilyDef> dcor_families(const DivergenceInfo& d) {
  return {
      family_def("random_samples", "random samples, 1..64 valid, D1/D2 in 1..16", random_samples, d),
      family_def("duplicate_rows", "some valid samples duplicated in X and/or Y", duplicate_rows, d),
      family_def("constant_samples", "every sample identical in X, in Y or in both", constant_samples, d),
      family_def("n_below_4", "fewer than 4 valid samples (result 0)", n_below_4, d),
      family_def("n_equals_4", "exactly 4 valid samples (N(N-3) = 4)", n_equals_4, d),
      family_def("y_equals_x", "samples_2 == samples_1 bitwise", y_equals_x, d),
      family_def("rotated_scaled", "Y = c X R, R orthogonal (exact signed permutation or rounded rotation)", rotated_scaled, d),
      family_def("masked_garbage", "NaN, +-inf, 1e30 at masked positions", masked_garbage, d),
      family_def("narrow_dtypes", "bf16 and f16 samples", narrow_dtypes, d),
      family_def("nan_samples", "NaN or +-inf in a valid sample (NaN result)", nan_samples, d),
      family_def("upstream_grads", "upstream gradient 0, negative, large, small", upstream_grads, d),
  };
}

}  // namespace divcheck::pgen

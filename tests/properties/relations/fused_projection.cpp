// Metamorphic: fused-linear KL equals project-then-divergence. Hidden states and weights are
// drawn on a grid (multiples of 1/8, |x| <= 2, H <= 8; T a power of two) on which every logit
// h W^T / T is exact in float32, so the fused case and a masked_kl case (sequence_mean) or a
// temperature_scaled_masked_kl case at T = 1 (token_mean) on the explicit logits compute the
// same real number. Checked: the two references agree to double precision; the CPU fused loss
// agrees with the CPU KL loss within the sum of their bounds; the CPU fused gradients agree
// with the CPU KL logit gradient pushed through the projection (G W / T for the hidden states,
// sum over tokens of G^T h / T for the weight) within the fused bound plus the KL bound carried
// through the same products.
#include <cmath>

#include "properties/case_builder.hpp"
#include "properties/gen_primitives.hpp"
#include "relations/relations.hpp"
#include "support/property_support.hpp"
#include "support/tensor_ops.hpp"

namespace divcheck::props {

namespace {

using pgen::int_toward;
using pgen::one_of_values;

struct Grid {
  std::int64_t B, T, H, V;
  double temp;
  std::vector<double> hs, ht, w;
};

std::vector<double> grid_values(std::size_t n) {
  const auto k = *rc::gen::container<std::vector<std::int64_t>>(n, int_toward(-16, 16, 0));
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(k[i]) / 8.0;
  return v;
}

// logits[tok][v] = sum_h h[tok][h] w[v][h] / temp (exact: a short sum of multiples of 2^-6).
std::vector<double> project(const std::vector<double>& h, const Grid& g) {
  std::vector<double> z(static_cast<std::size_t>(g.B * g.T * g.V));
  for (std::int64_t tok = 0; tok < g.B * g.T; ++tok)
    for (std::int64_t v = 0; v < g.V; ++v) {
      double s = 0.0;
      for (std::int64_t k = 0; k < g.H; ++k) s += h[static_cast<std::size_t>(tok * g.H + k)] * g.w[static_cast<std::size_t>(v * g.H + k)];
      z[static_cast<std::size_t>(tok * g.V + v)] = s / g.temp;
    }
  return z;
}

}  // namespace

void fused_projection_property(const Backend& backend) {
  Grid g;
  g.V = *one_of_values<std::int64_t>({1, 2, 3, 5, 8, 17, 33});
  g.B = *pgen::sized_int(1, 3);
  g.T = *pgen::sized_int(1, 4);
  g.H = *pgen::sized_int(1, 8);
  g.temp = *one_of_values<double>({1.0, 2.0, 0.5, 4.0});
  g.hs = grid_values(static_cast<std::size_t>(g.B * g.T * g.H));
  g.ht = grid_values(static_cast<std::size_t>(g.B * g.T * g.H));
  g.w = grid_values(static_cast<std::size_t>(g.V * g.H));
  const DType dt = *pgen::gen_float_dtype();
  const double beta = *one_of_values<double>({0.0, 1.0});
  const std::string reduction = *one_of_values<std::string>({"sequence_mean", "token_mean"});
  const bool has_mask = *pgen::chance(1, 2);
  std::vector<std::int64_t> mask(static_cast<std::size_t>(g.B * g.T), 1);
  if (has_mask) mask = pgen::draw_mask(mask.size(), DType::i64, 3, 4);
  const double gout = *one_of_values<double>({1.0, -2.0, 0.5});

  Case f;
  f.id = DivergenceId::fused_linear_masked_kl_divergence;
  f.params.jsd_beta = beta;
  f.params.temperature = g.temp;
  f.params.reduction = reduction;
  f.params.chunk_size = *one_of_values<std::int64_t>({1024, 1, 3});
  f.inputs["student_hidden"] = pgen::float_tensor(dt, {g.B, g.T, g.H}, g.hs);
  f.inputs["teacher_hidden"] = pgen::float_tensor(dt, {g.B, g.T, g.H}, g.ht);
  f.inputs["lm_head_weight"] = pgen::float_tensor(dt, {g.V, g.H}, g.w);
  if (has_mask) f.inputs["attention_mask"] = pgen::int_tensor(DType::i64, {g.B, g.T}, mask);
  f.wants_grad = {"student_hidden", "lm_head_weight"};
  f.grad_output = Tensor::scalar_f32(static_cast<float>(gout));
  f.provenance.family = "projection_grid";
  validate_case(f);
  RC_TAG(reduction, beta == 0.0 ? "forward" : "reverse", std::string(short_name(dt)));

  // The explicit-logit case. Student logits zs, teacher zt; beta 0: KL(pt||ps), beta 1: KL(ps||pt).
  const std::vector<double> zs = project(g.hs, g), zt = project(g.ht, g);
  const std::vector<double>& target = beta == 0.0 ? zt : zs;
  const std::vector<double>& input = beta == 0.0 ? zs : zt;
  Case k;
  std::string student_role, target_role, input_role;
  if (reduction == "sequence_mean") {
    k.id = DivergenceId::masked_kl_divergence;
    target_role = "target_logits";
    input_role = "input_logits";
    if (has_mask) k.inputs["attention_mask"] = pgen::int_tensor(DType::i64, {g.B, g.T}, mask);
  } else {
    k.id = DivergenceId::temperature_scaled_masked_kl_divergence;  // KL(teacher || student), token mean
    target_role = "teacher_logits";
    input_role = "student_logits";
    k.params.temperature = 1.0;
    k.inputs["position_mask"] = pgen::int_tensor(DType::i64, {g.B, g.T}, mask);
  }
  k.inputs[target_role] = pgen::float_tensor(DType::f32, {g.B, g.T, g.V}, target);
  k.inputs[input_role] = pgen::float_tensor(DType::f32, {g.B, g.T, g.V}, input);
  for (std::size_t i = 0; i < zs.size(); ++i)
    if (k.inputs[target_role].get(static_cast<std::int64_t>(i)) != target[i]) RC_FAIL("internal: logit not exact");
  student_role = beta == 0.0 ? input_role : target_role;
  k.wants_grad = {student_role};
  k.grad_output = f.grad_output;
  validate_case(k);

  const Expected ef = reference_of(f), ek = reference_of(k);
  const Bounds bf = bounds_of(f, ef), bk = bounds_of(k, ek);
  const Outputs of = compute(backend, f), ok = compute(backend, k);

  // References: the same real number, each rounded once to double.
  const double rf = ef.loss.value[0], rk = ek.loss.value[0];
  if (!(std::fabs(rf - rk) <= 0x1p-50 * std::fabs(rk) + 1e-300))
    RC_FAIL("references differ: fused " + std::to_string(rf) + " vs projected " + std::to_string(rk) + "\n" + describe_case(f));
  assert_empty(compare_within(of.loss, ok.loss, add_bounds(bf.loss, bk.loss), "loss (fused vs projected)"), f);

  // Gradients through the projection.
  const Tensor& G = ok.grads.at(student_role);
  const std::vector<double>& bG = bk.grads.at(student_role);
  const std::vector<double>& rG = ek.grads.at(student_role).value;
  Tensor dh(dt, {g.B, g.T, g.H}), dw(dt, {g.V, g.H});
  std::vector<double> bh(static_cast<std::size_t>(dh.numel())), bw(static_cast<std::size_t>(dw.numel()));
  for (std::int64_t tok = 0; tok < g.B * g.T; ++tok)
    for (std::int64_t h = 0; h < g.H; ++h) {
      double s = 0.0, sb = 0.0, sa = 0.0, sr = 0.0;
      for (std::int64_t v = 0; v < g.V; ++v) {
        const double wv = g.w[static_cast<std::size_t>(v * g.H + h)];
        const std::size_t gi = static_cast<std::size_t>(tok * g.V + v);
        s += G.get(static_cast<std::int64_t>(gi)) * wv;
        sb += bG[gi] * std::fabs(wv);
        sa += std::fabs(G.get(static_cast<std::int64_t>(gi)) * wv);
        sr += rG[gi] * wv;
      }
      const std::size_t i = static_cast<std::size_t>(tok * g.H + h);
      dh.set(static_cast<std::int64_t>(i), s / g.temp);
      // dh is rounded to dt here: allow that rounding, the KL bound carried through, this
      // double sum's error, and the fused bound (added by compare_within's caller below).
      bh[i] = (sb + 0x1p-50 * sa) / g.temp + unit_roundoff(dt) * std::fabs(s / g.temp);
      const double rf_h = ef.grads.at("student_hidden").value[i];
      if (!(std::fabs(rf_h - sr / g.temp) <= 0x1p-48 * sa / g.temp + 1e-300 + 0x1p-48 * std::fabs(rf_h)))
        RC_FAIL("reference grad student_hidden differs from the projected reference gradient\n" + describe_case(f));
    }
  for (std::int64_t v = 0; v < g.V; ++v)
    for (std::int64_t h = 0; h < g.H; ++h) {
      double s = 0.0, sb = 0.0, sa = 0.0;
      for (std::int64_t tok = 0; tok < g.B * g.T; ++tok) {
        const double hv = g.hs[static_cast<std::size_t>(tok * g.H + h)];
        const std::size_t gi = static_cast<std::size_t>(tok * g.V + v);
        s += G.get(static_cast<std::int64_t>(gi)) * hv;
        sb += bG[gi] * std::fabs(hv);
        sa += std::fabs(G.get(static_cast<std::int64_t>(gi)) * hv);
      }
      const std::size_t i = static_cast<std::size_t>(v * g.H + h);
      dw.set(static_cast<std::int64_t>(i), s / g.temp);
      bw[i] = (sb + 0x1p-50 * sa) / g.temp + unit_roundoff(dt) * std::fabs(s / g.temp);
    }
  assert_empty(compare_within(of.grads.at("student_hidden"), dh, add_bounds(bf.grads.at("student_hidden"), bh),
                              "grad student_hidden (fused vs projected)"),
               f);
  assert_empty(compare_within(of.grads.at("lm_head_weight"), dw, add_bounds(bf.grads.at("lm_head_weight"), bw),
                              "grad lm_head_weight (fused vs projected)"),
               f);
}

}  // namespace divcheck::props

// Case families of fused_linear_masked_kl_divergence: student/teacher hidden states (B, T, H),
// the lm_head weight (V, H), an optional attention mask; jsd_beta 0 and 1, both reductions,
// chunk sizes that leave remainders, temperature extremes, identical hidden states, masks,
// garbage at masked positions, narrow dtypes, NaN at a valid position, upstream gradients.
#include <algorithm>
#include <cmath>
#include <limits>

#include "properties/case_builder.hpp"
#include "properties/family_table.hpp"
#include "properties/float_gen.hpp"
#include "properties/gen_primitives.hpp"

namespace divcheck::pgen {

namespace {

struct FusedDraft {
  std::int64_t B = 1, T = 1, H = 1, V = 1;
  DType dt = DType::f32;
  std::vector<double> hs, ht, w;  // B*T*H, B*T*H, V*H
  bool has_mask = false;
  DType mask_dt = DType::boolean;
  std::vector<std::int64_t> mask;
  Params params;
  GradStyle grad_style = GradStyle::usual;
  std::int64_t rows() const { return B * T; }
};

FusedDraft draw_fused_layout(bool narrow_only = false) {
  FusedDraft f;
  f.V = *one_of_values<std::int64_t>({1, 2, 3, 5, 8, 17, 31, 32, 33, 64, 100, 127, 257, 1000});
  f.H = *rc::gen::withSize([](int size) {
    std::vector<std::int64_t> hs = {1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 64};
    const std::size_t n = std::max<std::size_t>(1, std::min<std::size_t>(hs.size(), 1 + static_cast<std::size_t>(size) / 9));
    hs.resize(n);
    return one_of_values(hs);
  });
  f.B = *sized_int(1, 4);
  f.T = *sized_int(1, 8);
  f.dt = narrow_only ? *gen_narrow_dtype() : *gen_float_dtype();
  return f;
}

// Hidden states at scale 1 and weights at 1/sqrt(H) keep the logits near unit size;
// `logit_scale` multiplies the weights.
void draw_fused_values(FusedDraft& f, double logit_scale) {
  const std::size_t nh = static_cast<std::size_t>(f.rows() * f.H);
  f.hs = draw_values(nh, logit_dist(1.0), f.dt);
  f.ht = draw_values(nh, logit_dist(1.0), f.dt);
  f.w = draw_values(static_cast<std::size_t>(f.V * f.H), logit_dist(logit_scale / std::sqrt(static_cast<double>(f.H))), f.dt);
}

void draw_fused_params(FusedDraft& f) {
  Params& p = f.params;
  p.jsd_beta = *one_of_values<double>({0.0, 1.0});
  p.temperature = *weighted<double>({{3, 1.0}, {1, 0.5}, {1, 2.0}, {1, 0.7}});
  p.reduction = *one_of_values<std::string>({"sequence_mean", "token_mean"});
  p.chunk_size = *weighted<std::int64_t>({{3, 1024}, {1, 1}, {1, 3}, {1, 7}, {1, 2}});
}

void draw_fused_mask(FusedDraft& f, bool force, int valid_num = 4, int valid_den = 5) {
  f.has_mask = force || *chance(3, 4);
  if (!f.has_mask) return;
  f.mask_dt = *gen_mask_dtype();
  f.mask = draw_mask(static_cast<std::size_t>(f.rows()), f.mask_dt, valid_num, valid_den);
}

Case finish(const DivergenceInfo& d, FusedDraft&& f, std::string_view family) {
  Case c;
  c.id = d.id;
  c.params = f.params;
  c.inputs["student_hidden"] = float_tensor(f.dt, {f.B, f.T, f.H}, f.hs);
  c.inputs["teacher_hidden"] = float_tensor(f.dt, {f.B, f.T, f.H}, f.ht);
  c.inputs["lm_head_weight"] = float_tensor(f.dt, {f.V, f.H}, f.w);
  if (f.has_mask) c.inputs["attention_mask"] = int_tensor(f.mask_dt, {f.B, f.T}, f.mask);
  c.wants_grad = draw_wants(d);
  c.grad_output = draw_grad_output(loss_shape(c), f.grad_style);
  c.provenance.family = std::string(family);
  validate_case(c);
  return c;
}

Case random_hidden(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout();
  draw_fused_values(f, *one_of_values<double>({1.0, 3.0, 0.3}));
  draw_fused_params(f);
  draw_fused_mask(f, false);
  return finish(d, std::move(f), "random_hidden");
}

Case chunk_remainders(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout();
  draw_fused_values(f, 1.0);
  draw_fused_params(f);
  // Chunk sizes that leave a remainder of the token count (1 and 1024 always qualify).
  std::vector<std::int64_t> chunks;
  for (std::int64_t k : {3, 7, 2, 5, 1, 1024})
    if (k == 1 || k >= f.rows() || f.rows() % k != 0) chunks.push_back(k);
  f.params.chunk_size = *one_of_values(chunks);
  draw_fused_mask(f, false);
  return finish(d, std::move(f), "chunk_remainders");
}

Case identical_hidden(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout();
  draw_fused_values(f, *one_of_values<double>({1.0, 3.0}));
  f.ht = f.hs;  // teacher == student bitwise: KL is exactly 0 in both directions
  draw_fused_params(f);
  draw_fused_mask(f, false);
  return finish(d, std::move(f), "identical_hidden");
}

Case temperature_extremes(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout();
  const double temp = *one_of_values<double>({1e-3, 1e3, 1e-2, 1e2});
  draw_fused_values(f, temp / 3.0);  // logits ~ T/3 (f16-safe), so logits / T stay near unit size
  draw_fused_params(f);
  f.params.temperature = temp;
  draw_fused_mask(f, false);
  return finish(d, std::move(f), "temperature_extremes");
}

Case fully_masked(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout();
  draw_fused_values(f, 1.0);
  draw_fused_params(f);
  draw_fused_mask(f, true);
  const std::int64_t mode = *int_toward(0, 2, 0);  // 0: some sequences; 1: all; 2: one valid token
  if (mode == 0) {
    const std::int64_t b = *int_toward(0, f.B - 1, 0);
    for (std::int64_t t = 0; t < f.T; ++t) f.mask[static_cast<std::size_t>(b * f.T + t)] = 0;
  } else {
    std::fill(f.mask.begin(), f.mask.end(), 0);
    if (mode == 2) f.mask[static_cast<std::size_t>(*int_toward(0, f.rows() - 1, 0))] = draw_valid_value(f.mask_dt);
  }
  return finish(d, std::move(f), "fully_masked");
}

Case masked_garbage(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout();
  draw_fused_values(f, 1.0);
  draw_fused_params(f);
  draw_fused_mask(f, true, 1, 2);
  f.mask[static_cast<std::size_t>(*int_toward(0, f.rows() - 1, 0))] = 0;
  const auto gs = draw_values(f.hs.size(), garbage_dist(), f.dt);
  const auto gt = draw_values(f.ht.size(), garbage_dist(), f.dt);
  for (std::int64_t r = 0; r < f.rows(); ++r) {
    if (f.mask[static_cast<std::size_t>(r)] != 0) continue;
    for (std::int64_t h = 0; h < f.H; ++h) {
      const std::size_t i = static_cast<std::size_t>(r * f.H + h);
      f.hs[i] = gs[i];
      f.ht[i] = gt[i];
    }
  }
  return finish(d, std::move(f), "masked_garbage");
}

Case narrow_dtypes(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout(true);
  draw_fused_values(f, *one_of_values<double>({1.0, 3.0}));
  draw_fused_params(f);
  draw_fused_mask(f, false);
  return finish(d, std::move(f), "narrow_dtypes");
}

Case nan_rows(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout();
  draw_fused_values(f, 1.0);
  draw_fused_params(f);
  draw_fused_mask(f, false);
  const std::int64_t r = *int_toward(0, f.rows() - 1, 0);
  if (f.has_mask && f.mask[static_cast<std::size_t>(r)] == 0) f.mask[static_cast<std::size_t>(r)] = draw_valid_value(f.mask_dt);
  std::vector<double>& h = *chance(1, 2) ? f.ht : f.hs;
  h[static_cast<std::size_t>(r * f.H + *int_toward(0, f.H - 1, 0))] = nan_value();
  return finish(d, std::move(f), "nan_rows");
}

Case upstream_grads(const DivergenceInfo& d) {
  FusedDraft f = draw_fused_layout();
  draw_fused_values(f, 1.0);
  draw_fused_params(f);
  draw_fused_mask(f, false);
  f.grad_style = GradStyle::unusual;
  return finish(d, std::move(f), "upstream_grads");
}


}  // namespace

std::vector<FamilyDef> fused_families(const DivergenceInfo& d) {
  return {
      family_def("random_hidden", "random hidden states and weights; jsd_beta 0/1, both reductions, odd V", random_hidden, d),
      family_def("chunk_remainders", "chunk sizes 1, 2, 3, 5, 7, 1024 with token counts not a multiple", chunk_remainders, d),
      family_def("identical_hidden", "teacher hidden == student hidden (KL exactly 0)", identical_hidden, d),
      family_def("temperature_extremes", "T = 1e-3 .. 1e3 with weights scaled to keep logits/T modest", temperature_extremes, d),
      family_def("fully_masked", "a fully masked sequence, an all-masked batch, a single valid token", fully_masked, d),
      family_def("masked_garbage", "NaN, +-inf, 1e30 in hidden states at masked positions", masked_garbage, d),
      family_def("narrow_dtypes", "bf16 and f16 hidden states and weights", narrow_dtypes, d),
      family_def("nan_rows", "NaN in a student or teacher hidden state at a valid position", nan_rows, d),
      family_def("upstream_grads", "upstream gradient 0, negative, large, small", upstream_grads, d),
  };
}

}  // namespace divcheck::pgen

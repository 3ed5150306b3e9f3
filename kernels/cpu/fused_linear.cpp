// fused_linear_masked_kl_divergence on the CPU (see fused_linear.hpp).
//
// Valid tokens are taken in (b, t) order, chunk_size at a time. Per chunk: the projections
// zs = hs W^T / T and zt = ht W^T / T (each logit a float32 dot product of input-dtype values
// in the lane order of reduction_order.hpp, then one division by T), then per token the KL row
// kernel of the logit rows with T = 1 on z (jsd_beta = 0: KL(pt || ps), the student is the q
// side; jsd_beta = 1: KL(ps || pt), the student is the p side). Its student-side gradient
// G = coef * d ell / d zs (coef = w g / T) gives
//   grad_student_hidden[token] = G W              (a lane-ordered sum over V per component),
//   grad_W += G^T hs[token]                       (float32, accumulated token by token),
// and grad_W is rounded once to W's dtype at the end. The teacher side is detached. Because
// grad_W is accumulated per token in token order, the result does not depend on chunk_size.
// Extra memory: 2 chunk_size x V floats for the chunk's logits, V x H floats for W and its
// gradient accumulator.
#include "kernels/cpu/fused_linear.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/cpu/lane_sum.hpp"
#include "kernels/cpu/reduction.hpp"
#include "kernels/cpu/row_kernels.hpp"
#include "kernels/cpu/tensor_rows.hpp"

namespace divcheck::cpu {

namespace {

// z_v = (sum_k h_k W_vk) / T for every v.
void project(const float* h, const float* w, std::int64_t vocab, std::int64_t hidden, float temperature, float* z) {
  for (std::int64_t v = 0; v < vocab; ++v) {
    const float* wv = w + v * hidden;
    z[v] = lane_sum(hidden, [&](std::int64_t k) { return h[k] * wv[k]; }) / temperature;
  }
}

}  // namespace

Outputs run_fused_linear(const Case& c) {
  const Tensor& hs = *c.input("student_hidden");
  const Tensor& ht = *c.input("teacher_hidden");
  const Tensor& wt = *c.input("lm_head_weight");
  const Tensor* mask = c.input("attention_mask");
  const std::int64_t B = hs.dim(0), T = hs.dim(1), H = hs.dim(2), V = wt.dim(0);
  const float temperature = static_cast<float>(c.params.temperature);
  const bool reverse = c.params.jsd_beta == 1.0;  // validated: 0 or 1

  PositionReduction red(c, reduction_kind(effective_reduction(c)), B, T, mask, 1.0 / c.params.temperature);
  Outputs out;
  out.grads = zero_gradients(c);
  Tensor* grad_h = c.wants("student_hidden") ? &out.grads.at("student_hidden") : nullptr;
  Tensor* grad_w = c.wants("lm_head_weight") ? &out.grads.at("lm_head_weight") : nullptr;
  const bool any_grad = grad_h || grad_w;

  const auto vh = static_cast<std::size_t>(V * H);
  std::vector<float> w(vh);
  load_f32(wt, 0, V * H, w.data());
  std::vector<float> gw(grad_w ? vh : 0, 0.0f);

  std::vector<std::int64_t> tokens;  // flat (b*T + t) of the valid positions
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t)
      if (red.valid(b, t)) tokens.push_back(b * T + t);

  const std::int64_t chunk = std::min<std::int64_t>(c.params.chunk_size, std::max<std::int64_t>(1, tokens.size()));
  const auto nv = static_cast<std::size_t>(V), nh = static_cast<std::size_t>(H);
  std::vector<float> zs(static_cast<std::size_t>(chunk) * nv), zt(static_cast<std::size_t>(chunk) * nv);
  std::vector<float> hsc(static_cast<std::size_t>(chunk) * nh), htr(nh);
  std::vector<float> p(nv), lp(nv), q(nv), lq(nv), gz(nv), gh(nh);
  const float nan = std::numeric_limits<float>::quiet_NaN();

  for (std::size_t start = 0; start < tokens.size(); start += static_cast<std::size_t>(chunk)) {
    const std::size_t count = std::min(tokens.size() - start, static_cast<std::size_t>(chunk));
    // The chunk's projections (the GEMM of a CUDA implementation).
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t tok = tokens[start + i];
      float* h_i = hsc.data() + i * nh;
      load_f32(hs, tok * H, H, h_i);
      load_f32(ht, tok * H, H, htr.data());
      project(h_i, w.data(), V, H, temperature, zs.data() + i * nv);
      project(htr.data(), w.data(), V, H, temperature, zt.data() + i * nv);
    }
    // The KL math per token, then its gradient through the projection.
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t tok = tokens[start + i];
      const std::int64_t b = tok / T, t = tok % T;
      const float* z_s = zs.data() + i * nv;
      const float* z_t = zt.data() + i * nv;
      const SideStats ss = side_stats(z_s, V, 1.0f);
      const SideStats st = side_stats(z_t, V, 1.0f);
      if (ss.poisoned || st.poisoned) {
        red.set_loss(b, t, nan);
        std::fill(gz.begin(), gz.end(), nan);
      } else {
        float* student_p = reverse ? p.data() : q.data();
        float* student_lp = reverse ? lp.data() : lq.data();
        float* teacher_p = reverse ? q.data() : p.data();
        float* teacher_lp = reverse ? lq.data() : lp.data();
        side_columns(z_s, V, 1.0f, ss, false, student_p, student_lp);
        side_columns(z_t, V, 1.0f, st, false, teacher_p, teacher_lp);
        const RowView view{V, p.data(), lp.data(), q.data(), lq.data(), nullptr};
        RowGrads g;
        if (any_grad) {
          (reverse ? g.gp : g.gq) = gz.data();
          g.coef = red.coef(b, t);
        }
        red.set_loss(b, t, kl_row(view, g, RowOptions{}));
      }
      if (!any_grad) continue;
      const float* h_i = hsc.data() + i * nh;
      if (grad_h) {
        for (std::int64_t k = 0; k < H; ++k)
          gh[static_cast<std::size_t>(k)] = lane_sum(V, [&](std::int64_t v) { return gz[v] * w[v * H + k]; });
        store_f32(*grad_h, tok * H, H, gh.data());
      }
      if (grad_w) {
        for (std::int64_t v = 0; v < V; ++v) {
          float* row = gw.data() + v * H;
          const float g_v = gz[static_cast<std::size_t>(v)];
          for (std::int64_t k = 0; k < H; ++k) row[k] = row[k] + g_v * h_i[k];
        }
      }
    }
  }
  if (grad_w) store_f32(*grad_w, 0, V * H, gw.data());
  out.loss = red.loss();
  return out;
}

}  // namespace divcheck::cpu

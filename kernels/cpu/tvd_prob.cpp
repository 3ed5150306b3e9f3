// tvd_prob on the CPU (see tvd_prob.hpp).
//
// Rows whose label is ignore_index are inert (never read, gradient +0). A row's value is
// (1/2) sum_v |p - q| (lane order); reductions: sum (scale 1), batchmean (1/n_valid),
// mean (1/(n_valid V)), none (the (N, V) elements |p - q|/2, ignored rows 0). The loss is
// scale * (the float sum of the valid rows' values in the lane order of reduction_order.hpp,
// ignored rows +0), rounded once; no valid row gives exactly 0.
// Gradient to p: (scale g / 2) sgn(p - q), with g of shape (N, V) for "none".
#include "kernels/cpu/tvd_prob.hpp"

#include <vector>

#include "kernels/cpu/lane_sum.hpp"
#include "kernels/cpu/tensor_rows.hpp"
#include "kernels/math/total_variation.hpp"

namespace divcheck::cpu {

Outputs run_tvd_prob(const Case& c) {
  const Tensor& pt = *c.input("p");
  const Tensor& qt = *c.input("q");
  const Tensor* labels = c.input("labels");
  const std::int64_t N = pt.dim(0), V = pt.dim(1);
  const std::string reduction = effective_reduction(c);
  const bool none = reduction == "none";

  std::vector<std::uint8_t> valid(static_cast<std::size_t>(N), 1);
  std::int64_t n_valid = N;
  if (labels) {
    n_valid = 0;
    for (std::int64_t i = 0; i < N; ++i) {
      valid[static_cast<std::size_t>(i)] = labels->get(i) != static_cast<double>(c.params.ignore_index);
      n_valid += valid[static_cast<std::size_t>(i)];
    }
  }
  double scale = 1.0;  // "sum" and "none"
  if (reduction == "batchmean") scale = n_valid ? 1.0 / static_cast<double>(n_valid) : 0.0;
  if (reduction == "mean") scale = n_valid ? 1.0 / (static_cast<double>(n_valid) * static_cast<double>(V)) : 0.0;

  Outputs out;
  out.grads = zero_gradients(c);
  Tensor* grad_p = c.wants("p") ? &out.grads.at("p") : nullptr;
  out.loss = none ? Tensor(DType::f32, {N, V}) : Tensor(DType::f32, {});
  const double g_scalar = (grad_p && !none) ? c.grad_output.get(0) : 0.0;
  const auto half_scale_g = static_cast<float>(0.5 * scale * g_scalar);

  const auto n = static_cast<std::size_t>(V);
  std::vector<float> p(n), q(n), row(n), g(n);
  std::vector<float> row_value(static_cast<std::size_t>(N), 0.0f);  // ignored rows: +0
  for (std::int64_t i = 0; i < N; ++i) {
    if (!valid[static_cast<std::size_t>(i)]) continue;
    const std::int64_t off = i * V;
    load_f32(pt, off, V, p.data());
    load_f32(qt, off, V, q.data());
    if (none) {
      for (std::int64_t v = 0; v < V; ++v) row[static_cast<std::size_t>(v)] = math::tvd_prob_element(p[v], q[v]);
      store_f32(out.loss, off, V, row.data());
    } else {
      row_value[static_cast<std::size_t>(i)] =
          0.5f * lane_sum(V, [&](std::int64_t v) { return math::tv_abs_term(p[v], q[v], true); });
    }
    if (grad_p) {
      for (std::int64_t v = 0; v < V; ++v) {
        const float coef = none ? static_cast<float>(0.5 * c.grad_output.get(off + v)) : half_scale_g;
        g[static_cast<std::size_t>(v)] = math::tvd_prob_grad(p[v], q[v], coef);
      }
      store_f32(*grad_p, off, V, g.data());
    }
  }
  // One rounding of total * scale (scale = 1/n_valid or 1/(n_valid V) formed in double).
  if (!none) {
    const float total = lane_sum(N, [&](std::int64_t i) { return row_value[static_cast<std::size_t>(i)]; });
    out.loss.set(0, n_valid == 0 ? 0.0 : static_cast<double>(total) * scale);
  }
  return out;
}

}  // namespace divcheck::cpu

// masked_unbiased_dcor on the CPU (see dcor.hpp).
//
// X (N x D1), Y (N x D2): the valid positions in (b, t) order. eps = safety_factor * 2^-23.
// Float32 throughout; every sum (squared norms over D, row sums over j, the total, the sums
// over i != j) is a lane-ordered sum (reduction_order.hpp). The U-centring is applied to
// a_ij - a_01 (the same result in exact arithmetic; exactly 0 for constant samples). Memory:
// the two N x N U-centred matrices; distances are recomputed where needed (same code, same
// values).
//
// Gradient (docs/semantics.md): with c = 1/(N(N-3)), R = V(X,Y)/den,
//   dR/da_ij = c (B~_ij / den + dR/dVxx * 2 A~_ij),   dR/db_ij = c (A~_ij / den + dR/dVyy * 2 B~_ij)
// (U-centring is an orthogonal projection, so the entrywise derivative of <A~, B~> is B~), and
// since a_ij = a_ji, d/dx_k = 2 sum_{j != k} dR/da_kj (x_k - x_j) / a_kj, times g.
// Exactly 0: N < 4 (result 0), an active clamp (ratio <= 0 or >= 1), masked positions. A
// non-finite component of a valid sample makes the result and every valid gradient element
// NaN, and so does 0/0 (eps = 0 with V(X,Y) = 0 = sqrt(max(V(X,X),0) max(V(Y,Y),0))).
#include "kernels/cpu/dcor.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/lane_sum.hpp"
#include "kernels/cpu/tensor_rows.hpp"
#include "kernels/math/dcor.hpp"

namespace divcheck::cpu {

namespace {

struct Samples {
  std::int64_t n = 0, dim = 0;
  std::vector<float> x;  // n x dim
  const float* row(std::int64_t i) const { return x.data() + i * dim; }
};

Samples gather(const Tensor& t, const std::vector<std::int64_t>& positions) {
  Samples s;
  s.n = static_cast<std::int64_t>(positions.size());
  s.dim = t.dim(2);
  s.x.resize(static_cast<std::size_t>(s.n * s.dim));
  for (std::int64_t i = 0; i < s.n; ++i) load_f32(t, positions[static_cast<std::size_t>(i)] * s.dim, s.dim, s.x.data() + i * s.dim);
  return s;
}

bool all_finite(const Samples& s) {
  for (float v : s.x)
    if (!std::isfinite(v)) return false;
  return true;
}

float distance(const Samples& s, std::int64_t i, std::int64_t j, float eps) {
  const float* a = s.row(i);
  const float* b = s.row(j);
  const float sq = lane_sum(s.dim, [&](std::int64_t k) {
    const float d = a[k] - b[k];
    return d * d;
  });
  return math::dcor_distance(sq, eps);
}

// The U-centred matrix (row-major N x N, zero diagonal) of one sample set.
// U-centring is linear and maps a constant off-diagonal matrix to 0, so it is applied to
// a_ij - k with k = a_01 (mathematically the same result): the entries it sums are smaller,
// and samples that are all identical (every a_ij bitwise equal) give exactly 0, as the exact
// value is, instead of the rounding residue of (N-1)c/(N-2) terms.
std::vector<float> u_centred(const Samples& s, float eps) {
  const std::int64_t n = s.n;
  std::vector<float> a(static_cast<std::size_t>(n * n), 0.0f);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = i + 1; j < n; ++j) a[i * n + j] = a[j * n + i] = distance(s, i, j, eps);
  const float k = a[1];  // a_01 (n >= 4)
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      if (i != j) a[i * n + j] = a[i * n + j] - k;
  std::vector<float> row(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) row[i] = lane_sum(n, [&](std::int64_t j) { return a[i * n + j]; });
  const float total = lane_sum(n, [&](std::int64_t i) { return row[i]; });
  const auto n2 = static_cast<float>(n - 2);
  const auto n12 = static_cast<float>(static_cast<double>(n - 1) * static_cast<double>(n - 2));
  std::vector<float> row_over(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) row_over[i] = row[i] / n2;
  const float total_over = total / n12;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      a[i * n + j] = i == j ? 0.0f : math::u_centered(a[i * n + j], row_over[i], row_over[j], total_over);
  return a;
}

// sum_{i != j} u_ij v_ij / (N(N-3)) (the diagonals are 0, so the full sum is the same).
float u_product(const std::vector<float>& u, const std::vector<float>& v, std::int64_t n) {
  const float s = lane_sum(n * n, [&](std::int64_t k) { return u[k] * v[k]; });
  return s / static_cast<float>(static_cast<double>(n) * static_cast<double>(n - 3));
}

// grad[k] = 2 g sum_{j != k} G_kj (x_k - x_j) / a_kj, G_kj = c (cross_kj / den + dself * 2 self_kj).
void sample_gradient(const Samples& s, const std::vector<float>& cross, const std::vector<float>& self, float inv_den,
                     float d_self, float scale, float eps, std::vector<float>& grad) {
  const std::int64_t n = s.n, dim = s.dim;
  grad.assign(static_cast<std::size_t>(n * dim), 0.0f);
  std::vector<float> gk(static_cast<std::size_t>(n));  // G_kj / a_kj for the current k
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (j == k) { gk[j] = 0.0f; continue; }
      const float gkj = cross[k * n + j] * inv_den + d_self * (2.0f * self[k * n + j]);
      gk[j] = math::distance_direction(gkj, distance(s, k, j, eps));
    }
    const float* xk = s.row(k);
    for (std::int64_t e = 0; e < dim; ++e) {
      const float sum = lane_sum(n, [&](std::int64_t j) { return gk[j] * (xk[e] - s.row(j)[e]); });
      grad[k * dim + e] = scale * sum;
    }
  }
}

}  // namespace

Outputs run_dcor(const Case& c) {
  const Tensor& t1 = *c.input("samples_1");
  const Tensor& t2 = *c.input("samples_2");
  const Tensor& mask = *c.input("attention_mask");
  const std::int64_t B = t1.dim(0), T = t1.dim(1);
  std::vector<std::int64_t> positions;
  for (std::int64_t i = 0; i < B * T; ++i)
    if (mask.nonzero(i)) positions.push_back(i);

  Outputs out;
  out.grads = zero_gradients(c);
  Tensor* g1 = c.wants("samples_1") ? &out.grads.at("samples_1") : nullptr;
  Tensor* g2 = c.wants("samples_2") ? &out.grads.at("samples_2") : nullptr;
  const std::int64_t n = static_cast<std::int64_t>(positions.size());
  if (n < 4) {  // result 0, gradients 0
    out.loss = Tensor::scalar_f32(0.0f);
    return out;
  }
  const Samples x = gather(t1, positions);
  const Samples y = gather(t2, positions);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (!all_finite(x) || !all_finite(y)) {
    out.loss = Tensor::scalar_f32(nan);
    for (Tensor* g : {g1, g2})
      if (g)
        for (std::int64_t pos : positions) fill_f32(*g, pos * g->dim(2), g->dim(2), nan);
    return out;
  }

  const auto eps = static_cast<float>(c.params.safety_factor * std::ldexp(1.0, -23));
  const std::vector<float> a = u_centred(x, eps);
  const std::vector<float> b = u_centred(y, eps);
  const float vxy = u_product(a, b, n);
  const float vxx = u_product(a, a, n);
  const float vyy = u_product(b, b, n);
  const math::DcorRatio r = math::dcor_ratio(vxy, vxx, vyy, eps);
  out.loss = Tensor::scalar_f32(r.value);
  if ((!g1 && !g2) || r.clamp_active) return out;  // an active clamp: gradients exactly 0

  const float inv_den = 1.0f / r.den;
  const auto cn = static_cast<float>(1.0 / (static_cast<double>(n) * static_cast<double>(n - 3)));
  const float g = static_cast<float>(c.grad_output.get(0));
  const float scale = 2.0f * cn * g;
  std::vector<float> grad;
  if (g1) {
    sample_gradient(x, b, a, inv_den, math::dcor_d_ratio_d_vxx(r, vxy, vxx, vyy), scale, eps, grad);
    for (std::int64_t i = 0; i < n; ++i) store_f32(*g1, positions[i] * x.dim, x.dim, grad.data() + i * x.dim);
  }
  if (g2) {
    sample_gradient(y, a, b, inv_den, math::dcor_d_ratio_d_vxx(r, vxy, vyy, vxx), scale, eps, grad);
    for (std::int64_t i = 0; i < n; ++i) store_f32(*g2, positions[i] * y.dim, y.dim, grad.data() + i * y.dim);
  }
  return out;
}

}  // namespace divcheck::cpu

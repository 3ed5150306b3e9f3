// Centred one-pass records of the squared Hellinger distance: a form of H = ½ Σ (√p − √q)² that
// one read of the row can take, column chunk by chunk, without S or the row's maxima first, with
// every piece of every sum non-negative (no cancellation, as the rule "do not compute it as
// 1 − Σ √(pq)" wants). The error argument: docs/tolerances.md "Centred one-pass records of squared
// Hellinger's forward"; tests/reference/hellinger_centred_test.cpp judges the records against the
// reference with the verdict's own bound. Used by the streamed kernel's forward of
// squared_hellinger_distance (row_policies.cuh HellingerCentredPolicy; bench/RESULTS.md step 80).
//
// A record of a set of columns whose shifted logits t_y (the p side) and t_x (the q side) share
// one pair of maxima, with the roots u = e^(t_y / 2), w = e^(t_x / 2):
//   a = Σ u²,   b = Σ w²,   λ = √(a / b),   r = Σ (u − λ w)².
// For a whole row H = r / (2a) exactly: √p = u / √a and √q = w / √b = λ w / √a.
// A record is centred at its own λ, the scale that makes its two sides' masses equal. Two records
// merge by moving each to the merged centre λ = √((a₁ + a₂)/(b₁ + b₂)), exactly:
//   Σ (u − λ w)² = rᵢ + 2 (λᵢ − λ) Σ w (u − λᵢ w) + (λᵢ − λ)² bᵢ,
// and at the record's own centre Σ w (u − λᵢ w) = −rᵢ / (2 λᵢ) (expand rᵢ = aᵢ − 2 λᵢ Σ u w + λᵢ² bᵢ
// with λᵢ² bᵢ = aᵢ), so
//   rᵢ' = rᵢ · λ / λᵢ + (λᵢ − λ)² bᵢ:
// two non-negative terms (hellinger_moved). A merge adds no cancellation, and its one assumption,
// the record's centre, enters only through the rounding of λᵢ (of second order, or first order
// times the distance of λ from λᵢ: docs/tolerances.md).
// Moving a record to larger maxima (dy = m_y − M_y ≤ 0, dx likewise; fy = e^dy, fx = e^dx) scales
// u by √fy and w by √fx: a and r by fy, b by fx, and λ by √(fy / fx) (hellinger_rescale).
// Identical rows (x = y bitwise): u = w, a = b bitwise, λ = 1 exactly (hellinger_centre), so every
// u − λ w and every r is exactly 0, and stays so through merges ((λᵢ − λ)² = 0, 0 · λ / λᵢ = 0): the
// loss is exactly 0, as the rule wants.
// Preconditions: the tame rows' (softmax.hpp tame_side): every u, w > 0 and finite (t ≥ −64: u ≥
// e^−32, u² a normal float), so every record of at least one column has a, b > 0. Columns past a
// chunk's end enter as u = w = 0 and add exact zeros. The empty record {0, 0, 0} is the identity of
// the merge.
#pragma once

#include "kernels/math/hd.hpp"

namespace divcheck::math {

struct HellingerRecord {
  float a = 0.0f, b = 0.0f, r = 0.0f;
};

// A record's centre λ = √(a / b), by the fast reciprocal and square root on the device (f_fast_div,
// f_fast_sqrt); a == b gives exactly 1 (a · rcp(a) need not be 1: the Jefferys records' lesson,
// jefferys_centred.hpp). Every stage computes a record's centre from its a and b by this function,
// so the centre a record's r was taken at is the one its merge assumes, bit for bit.
DIVCHECK_HD inline float hellinger_centre(float a, float b) { return a == b ? 1.0f : f_fast_sqrt(f_fast_div(a, b)); }

// The record of N columns from their roots (N a power of two; columns past the chunk's end as u =
// w = 0).
template <int N>
DIVCHECK_HD inline HellingerRecord hellinger_chunk_record(const float (&u)[N], const float (&w)[N]) {
  float uu[N], ww[N];
  for (int v = 0; v < N; ++v) {
    uu[v] = u[v] * u[v];
    ww[v] = w[v] * w[v];
  }
  HellingerRecord rec;
  rec.a = pairwise_sum<N>(uu);
  rec.b = pairwise_sum<N>(ww);
  const float lambda = hellinger_centre(rec.a, rec.b);
  float dd[N];
  for (int v = 0; v < N; ++v) {
    const float d = f_fma(-lambda, w[v], u[v]);
    dd[v] = d * d;
  }
  rec.r = pairwise_sum<N>(dd);
  return rec;
}

// x's r moved from its own centre to the centre lambda: r λ / λₓ + (λₓ − λ)² b.
DIVCHECK_HD inline float hellinger_moved(const HellingerRecord& x, float lambda) {
  const float lx = hellinger_centre(x.a, x.b);
  const float d = lx - lambda;
  return f_fma(x.r, f_fast_div(lambda, lx), (d * d) * x.b);
}

DIVCHECK_HD inline bool hellinger_empty(const HellingerRecord& r) { return r.a == 0.0f && r.b == 0.0f; }

// x and y (the same maxima) as one record centred at their merged λ. Symmetric bit for bit
// (merge(x, y) == merge(y, x)): every operation pairs the two sides commutatively.
DIVCHECK_HD inline HellingerRecord hellinger_merge(const HellingerRecord& x, const HellingerRecord& y) {
  if (hellinger_empty(x)) return y;
  if (hellinger_empty(y)) return x;
  HellingerRecord m;
  m.a = x.a + y.a;
  m.b = x.b + y.b;
  const float lambda = hellinger_centre(m.a, m.b);
  m.r = hellinger_moved(x, lambda) + hellinger_moved(y, lambda);
  return m;
}

// r moved to larger maxima: fy = e^(m_y − M_y), fx = e^(m_x − M_x) (each ≤ 1; exactly 1 where the
// maximum does not change).
DIVCHECK_HD inline HellingerRecord hellinger_rescale(const HellingerRecord& r, float fy, float fx) {
  return {r.a * fy, r.b * fx, r.r * fy};
}

// The loss of a whole row's record.
DIVCHECK_HD inline float hellinger_record_loss(const HellingerRecord& r) { return 0.5f * (r.r / r.a); }

}  // namespace divcheck::math

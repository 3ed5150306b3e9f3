// Centred one-pass records of the Jefferys loss: a form of J = Σ (p − q)(lp − lq) that one read
// of the row can take, column chunk by chunk, without S or the row's maxima first, and without
// the first-order cancellation that made the plain one-pass sums of Jefferys fail the gate
// (docs/tolerances.md "The CUDA kernels' one-pass statistics"). The error argument: docs/
// tolerances.md "Centred one-pass records of Jefferys' forward"; tests/reference/
// jefferys_centred_test.cpp judges the records against the reference with the verdict's own
// bound. Used by the streamed kernel's forward of the Jefferys rows (row_policies.cuh
// JefferysCentredPolicy; bench/RESULTS.md step 79).
//
// A record of a set of columns whose shifted logits t_y (the p side) and t_x (the q side) share
// one pair of maxima, with ey = e^(t_y), ex = e^(t_x) and g = t_y − t_x:
//   a = Σ ey,   b = Σ ex,   κ = a / b,
//   e = Σ (ey − κ ex)(g − log κ),   k = Σ ex (g − log κ).
// For a whole row J = e / a exactly: p − q = (ey − κ ex) / a and lp − lq = g − log κ.
// A record is centred at its own ratio κ: every term of e is ≥ 0 (both factors have the sign of
// log(ey / (κ ex))) and k = −b·KL(q‖p) of its columns (≤ 0), so its sums hold no first-order
// cancellation. Two records merge by moving each to the merged ratio κ = (a₁ + a₂)/(b₁ + b₂)
// (jefferys_recentre), exactly: with δ = log κ − log κᵢ and W = κ bᵢ − aᵢ (= (κ − κᵢ) bᵢ),
//   eᵢ' = eᵢ + W (δ − kᵢ / bᵢ),   kᵢ' = kᵢ − δ bᵢ
// (expand Σ (ey − κ ex)(g − log κ) around κᵢ and use Σ (ey − κᵢ ex) = 0); W δ ≥ 0 and W kᵢ / bᵢ
// are of second order in the distance of κ from κᵢ, so a merge adds no cancellation either (its
// dropped term δ (aᵢ − κᵢ bᵢ) is the rounding of κᵢ, u aᵢ |δ|). The code takes the same
// expansion without the division: eᵢ' = eᵢ + (κ − κᵢ)(δ bᵢ − kᵢ) (jefferys_recentre).
// Moving a record to larger maxima (dy = m_y − M_y ≤ 0, dx likewise) multiplies a and e by e^dy,
// b and k by e^dx: the ratios ey / (κ ex) and g − log κ do not change.
// Identical rows (x = y bitwise): ey = ex, κ = 1, log κ = 0, g = 0 bitwise, so every e and k is
// exactly 0 and stays so through merges (W = 0, δ = 0): the loss is exactly 0, as the rule wants.
// Preconditions: the tame rows' (softmax.hpp tame_side): every ey, ex > 0 and finite, so every
// record of at least one column has a, b > 0. Columns past a chunk's end enter as ey = ex = 0,
// g = 0 and add exact zeros. The empty record {0, 0, 0, 0} is the identity of the merge.
#pragma once

#include "kernels/math/hd.hpp"

namespace divcheck::math {

struct JefferysRecord {
  float a = 0.0f, b = 0.0f, e = 0.0f, k = 0.0f;
};

// A record's centre: kappa = a / b and log kappa, by the fast reciprocal and log on the device
// (f_fast_div, f_fast_log). The loss is insensitive to small errors of the centre: J = e / a for a
// centre (kappa', l') near (a / b, log(a / b)) changes by kappa' η k (a kappa' = kappa (1 + η)),
// of second order, and by ε Σ (ey − kappa ex) = ε (a − kappa b) (an l' = log kappa + ε), ≈ 0.
// Every stage computes a record's centre from its a and b by this function, so the centre that a
// record's terms used is the one its merge assumes, bit for bit.
struct JefferysCentre {
  float kappa = 1.0f, log_kappa = 0.0f;
};
// a == b gives exactly (1, 0) (f_fast_log(1) is +0): the fast reciprocal's a · rcp(a) need not be 1,
// and identical rows must give a loss of exactly 0 (the H200 gate found it: 599 identical_rows and
// partial_ties cases of 279000, each loss ~1e-14 where 0 is the rule).
DIVCHECK_HD inline JefferysCentre jefferys_centre(float a, float b) {
  const float kappa = a == b ? 1.0f : f_fast_div(a, b);
  return {kappa, f_fast_log(kappa)};
}

// The record of N columns (N a power of two; columns past the chunk's end as ey = ex = g = 0),
// and its centre (jefferys_centre of its a and b) in `centre`.
template <int N>
DIVCHECK_HD inline JefferysRecord jefferys_chunk_record(const float (&ey)[N], const float (&ex)[N], const float (&g)[N],
                                                        JefferysCentre& centre) {
  JefferysRecord r;
  r.a = pairwise_sum<N>(ey);
  r.b = pairwise_sum<N>(ex);
  const JefferysCentre c = jefferys_centre(r.a, r.b);
  centre = c;
  float te[N], tk[N];
  for (int v = 0; v < N; ++v) {
    const float s = g[v] - c.log_kappa;
    te[v] = f_fma(-c.kappa, ex[v], ey[v]) * s;
    tk[v] = ex[v] * s;
  }
  r.e = pairwise_sum<N>(te);
  r.k = pairwise_sum<N>(tk);
  return r;
}
template <int N>
DIVCHECK_HD inline JefferysRecord jefferys_chunk_record(const float (&ey)[N], const float (&ex)[N],
                                                        const float (&g)[N]) {
  JefferysCentre unused;
  return jefferys_chunk_record<N>(ey, ex, g, unused);
}

// r's sums moved from its centre ci to the centre c: with δ = log κ − log κᵢ and D = δ b − k,
//   e' = e + (κ − κᵢ) D,   k' = −D
// (Σ (ey − κ ex)(g − log κ) expanded around (κᵢ, log κᵢ), the term δ (a − κᵢ b) dropped: the
// rounding of κᵢ, ~u a |δ|).
DIVCHECK_HD inline JefferysRecord jefferys_recentre(const JefferysRecord& r, const JefferysCentre& ci,
                                                    const JefferysCentre& c) {
  const float d = f_fma(c.log_kappa - ci.log_kappa, r.b, -r.k);
  JefferysRecord o = r;
  o.e = f_fma(c.kappa - ci.kappa, d, r.e);
  o.k = -d;
  return o;
}

DIVCHECK_HD inline bool jefferys_empty(const JefferysRecord& r) { return r.a == 0.0f && r.b == 0.0f; }

// x and y (the same maxima) as one record centred at their merged ratio. Symmetric bit for bit
// (merge(x, y) == merge(y, x)): every operation pairs the two sides commutatively.
DIVCHECK_HD inline JefferysRecord jefferys_merge(const JefferysRecord& x, const JefferysRecord& y) {
  if (jefferys_empty(x)) return y;
  if (jefferys_empty(y)) return x;
  JefferysRecord m;
  m.a = x.a + y.a;
  m.b = x.b + y.b;
  const JefferysCentre c = jefferys_centre(m.a, m.b);
  const JefferysRecord u = jefferys_recentre(x, jefferys_centre(x.a, x.b), c);
  const JefferysRecord v = jefferys_recentre(y, jefferys_centre(y.a, y.b), c);
  m.e = u.e + v.e;
  m.k = u.k + v.k;
  return m;
}

// jefferys_merge of records whose centres the caller holds (cx, cy: jefferys_centre of their a
// and b, bit for bit, e.g. from jefferys_chunk_record and a previous merge): the same bits, two
// centres fewer to compute; `c` receives the merged record's centre.
DIVCHECK_HD inline JefferysRecord jefferys_merge_centred(const JefferysRecord& x, const JefferysCentre& cx,
                                                         const JefferysRecord& y, const JefferysCentre& cy,
                                                         JefferysCentre& c) {
  if (jefferys_empty(x)) {
    c = cy;
    return y;
  }
  if (jefferys_empty(y)) {
    c = cx;
    return x;
  }
  JefferysRecord m;
  m.a = x.a + y.a;
  m.b = x.b + y.b;
  const JefferysCentre cm = jefferys_centre(m.a, m.b);  // (c may alias cx or cy: written last)
  const JefferysRecord u = jefferys_recentre(x, cx, cm);
  const JefferysRecord v = jefferys_recentre(y, cy, cm);
  m.e = u.e + v.e;
  m.k = u.k + v.k;
  c = cm;
  return m;
}

// r moved to larger maxima: fy = e^(m_y − M_y), fx = e^(m_x − M_x) (each ≤ 1; exactly 1 where the
// maximum does not change).
DIVCHECK_HD inline JefferysRecord jefferys_rescale(const JefferysRecord& r, float fy, float fx) {
  JefferysRecord o;
  o.a = r.a * fy;
  o.b = r.b * fx;
  o.e = r.e * fy;
  o.k = r.k * fx;
  return o;
}

// The loss of a whole row's record.
DIVCHECK_HD inline float jefferys_record_loss(const JefferysRecord& r) { return r.e / r.a; }

}  // namespace divcheck::math

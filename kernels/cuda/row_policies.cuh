// The six row kernels of the logit-level divergences as policies of the CUDA row kernel
// (logit_rows_kernel.cuh). Each policy says which row sums it needs (terms: the summands of one column), how
// they give the per-position loss and the gradient mode (finish), and the gradient of one
// column (grads). Every formula is kernels/math's; the composition mirrors
// kernels/cpu/row_kernels.cpp line by line (same sums, same operand order, same NaN / zero
// rules), so the two backends compute the same expressions.
// kLossStats: the first kLossStats statistics are all that finish() reads; the rest serve the
// gradients (the forward-only kernels sum only those: LossOnly below).
// kExactS: whether the row's normalisers S are the exact FixedSum (total variation only: its
// sgn(p - q) needs bitwise ties) or float sums in the kernel's order (every other policy: within
// sigma(V) like every row sum, and a float-to-integer conversion and a 64-bit add per column and
// side cheaper; docs/semantics.md, "Summation order").
#pragma once

#include <type_traits>

#include "kernels/math/cross_entropy.hpp"
#include "kernels/math/hellinger.hpp"
#include "kernels/math/hellinger_centred.hpp"
#include "kernels/math/jefferys_centred.hpp"
#include "kernels/math/jensen_shannon.hpp"
#include "kernels/math/kl.hpp"
#include "kernels/math/softmax.hpp"
#include "kernels/math/total_variation.hpp"

namespace divcheck::cuda {

// One column of a position's two distributions (p side from y, q side from x).
struct Column {
  float p, lp, q, lq;
  bool s;  // in the support (true without a support mask)
};
// A column of the roots form (TameFold::roots below, squared Hellinger's tame columns): with
// sqrt(p) and sqrt(q), which p and q are the squares of. Only HellingerPolicy receives one.
struct RootedColumn : Column {
  float rp, rq;
};
// sqrt(p) and sqrt(q) of a column as squared Hellinger reads them: the roots form's, else
// math::sqrt_prob of lp and lq (exp(lp / 2)).
__device__ __forceinline__ float root_p(const Column& c) { return math::sqrt_prob(c.lp); }
__device__ __forceinline__ float root_q(const Column& c) { return math::sqrt_prob(c.lq); }
__device__ __forceinline__ float root_p(const RootedColumn& c) { return c.rp; }
__device__ __forceinline__ float root_q(const RootedColumn& c) { return c.rq; }

// How make_column (row_columns.cuh) forms a tame log-softmax column, by policy (kTameFold):
// none: math::softmax_column_tame (the general form's bits); probs: p and q by one fma of the
// shifted logit (math::softmax_column_tame_folded: total variation, which reads p and q only);
// roots: sqrt(p), sqrt(q) by one fma and p, q as their squares (math::softmax_column_tame_roots:
// squared Hellinger, which reads the roots and p, q). Neither folded form reads lp.
enum class TameFold : unsigned char { none, probs, roots };

struct RowOptions {
  bool has_support = false;
  bool capped = false;
  float max_loss = 0.0f;
  float scaling_factor = 1.0f;
};

enum class GradMode : int { values, nan, zero };

struct RowResult {
  float ell;      // the per-position loss
  GradMode mode;  // values; NaN everywhere (ell = +inf, rule 3); exact zeros (capped CE, flat)
  float factor;   // multiplies every gradient formula: coef = w g / T (CE capped: coef * slope)
};

__device__ __forceinline__ RowResult finite_or_nan(float ell, float coef) {
  return {ell, ell < math::kInf ? GradMode::values : GradMode::nan, coef};
}

// One-pass statistics (kOnePass > 0; kernels/math/kl.hpp): on the log-softmax path without a
// support mask, the pass that sums S also sums one_pass_terms, and stats_from_one_pass gives
// every statistic the row needs; the separate statistics pass is skipped. Only where the
// loss's error bound has the absolute floor that form needs (KL, cross-entropy: docs/tolerances.md).
struct KlPolicy {
  static constexpr int kStats = 1;  // K_p
  static constexpr int kLossStats = 1;
  static constexpr int kOnePass = 1;  // A
  static constexpr bool kTameFactorsLinearInT = true;  // (e_y, t_y - t_x)
  static constexpr bool kExactS = false;
  __device__ static void one_pass_terms(float ty, float tx, float ey, float, float (&out)[kOnePass]) {
    out[0] = math::kl_one_pass_term(ey, ty, tx);
  }
  // Tame rows: the term as a product of two finite factors (one_pass_sums sums them unscaled).
  __device__ static void one_pass_factors_tame(float ty, float tx, float ey, float, float (&a)[kOnePass],
                                               float (&b)[kOnePass]) {
    math::kl_one_pass_factors_tame(ey, ty, tx, a[0], b[0]);
  }
  __device__ static void stats_from_one_pass(const float* sums, float sy, float log_sy, float, float log_sx,
                                             float (&st)[kStats]) {
    st[0] = math::kl_from_one_pass(sums[0], sy, log_sy, log_sx);
  }
  __device__ static void rescale_one_pass(float (&a)[kOnePass], float sy, float fy, float dy, float dx, float,
                                          float) {
    a[0] = math::kl_one_pass_rescale(a[0], sy, fy, dy, dx);
  }
  template <bool kTame = false>
  __device__ static void terms(const Column& c, float (&out)[kStats]) {
    out[0] = kTame ? math::kl_term_finite(c.p, c.lp, c.lq) : math::kl_term(c.p, c.lp, c.lq);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return finite_or_nan(st[0], coef);
  }
  // Tame rows on the log-softmax path: the gradients from the shifted logits (kl.hpp
  // kl_grads_tame; gradient_chunk, kHasTameShiftedGrads).
  using TameGradRow = math::TameGradRow;
  __device__ static TameGradRow tame_grad_row(float log_sy, float log_sx, const float* st, float f) {
    return math::kl_tame_grad_row(log_sy, log_sx, math::KlStats{st[0]}, f);
  }
  __device__ static void grads_tame_shifted(float ty, float tx, const TameGradRow& r, float& gp, float& gq) {
    math::kl_grads_tame(ty, tx, r, gp, gq);
  }
  template <bool kTame = false>
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::KlStats ks{st[0]};
    gp = f * (kTame ? math::kl_grad_p_finite(c.p, c.lp, c.lq, ks) : math::kl_grad_p(c.p, c.lp, c.lq, ks));
    gq = f * math::kl_grad_q(c.p, c.q);
  }
};

// Forward-only Jefferys by centred one-pass records (kernels/math/jefferys_centred.hpp; the
// streamed kernel, stream_rows_kernel.cuh): the sums e, k, then S_y = a and S_x = b. Records do
// not add: every stage that adds one-pass sums merges them (merge_one_pass_sums: merge_records),
// and the move to larger maxima scales e with S_y and k with S_x. Tame rows only (softmax.hpp
// tame_side): the combine hands every other row to the cluster kernel (logit_launch.cu, the
// fallback launch). centred_chunk: a chunk's record from its shifted logits (the first n columns;
// kWhole: all kChunk).
struct JefferysCentredPolicy {
  static constexpr int kStats = 1;  // J
  static constexpr int kLossStats = 1;
  static constexpr int kOnePass = 2;  // e, k
  static constexpr bool kCentredRecords = true;
  static constexpr bool kExactS = false;
  // A record in the one-pass sums' layout: e, k, then S_y = a, S_x = b.
  __device__ static math::JefferysRecord load(const float* v) { return {v[2], v[3], v[0], v[1]}; }
  __device__ static void store(const math::JefferysRecord& r, float* v) {
    v[0] = r.e;
    v[1] = r.k;
    v[2] = r.a;
    v[3] = r.b;
  }
  // The centres the caller may hold (the streamed kernel's group loop, stream_rows_kernel.cuh
  // kHoldsCentres): centred_chunk gives the chunk's centre, and the merge that takes the two
  // records' centres gives the merged one (the same bits, two centres fewer per merge).
  // bench/RESULTS.md step 81: bf16 forward 1.035-1.040x on an H100 (squared Hellinger's version of
  // it 0.993x, so that row does not hold them).
  using Centre = math::JefferysCentre;
  template <int kN, bool kWhole>
  __device__ static void centred_chunk(const float (&ty)[kN], const float (&tx)[kN], int n, float* part, Centre& c) {
    float ey[kN] = {}, ex[kN] = {}, g[kN] = {};
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (kWhole || k < n) {
        ey[k] = math::f_softmax_exp_ftz(ty[k]);
        ex[k] = math::f_softmax_exp_ftz(tx[k]);
        g[k] = ty[k] - tx[k];
      }
    }
    store(math::jefferys_chunk_record<kN>(ey, ex, g, c), part);
  }
  template <int kN, bool kWhole>
  __device__ static void centred_chunk(const float (&ty)[kN], const float (&tx)[kN], int n, float* part) {
    Centre unused;
    centred_chunk<kN, kWhole>(ty, tx, n, part, unused);
  }
  __device__ static void merge_records(float* run, const float* part) {
    store(math::jefferys_merge(load(run), load(part)), run);
  }
  __device__ static void merge_records(float* run, Centre& crun, const float* part, const Centre& cpart) {
    Centre c;
    store(math::jefferys_merge_centred(load(run), crun, load(part), cpart, c), run);
    crun = c;
  }
  __device__ static void rescale_one_pass(float (&a)[kOnePass], float, float fy, float, float, float, float fx) {
    a[0] = a[0] * fy;
    a[1] = a[1] * fx;
  }
  __device__ static void stats_from_one_pass(const float* sums, float sy, float, float, float, float (&st)[kStats]) {
    st[0] = math::jefferys_record_loss(math::JefferysRecord{sy, 0.0f, sums[0], 0.0f});
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return finite_or_nan(st[0], coef);
  }
};

// Forward-only squared Hellinger by centred one-pass records (kernels/math/hellinger_centred.hpp;
// the streamed kernel, as JefferysCentredPolicy): the sum r, then S_y = a = Σ u² and S_x = b = Σ w²
// of the roots u = e^(t_y / 2), w = e^(t_x / 2) (the halved exponential of the shifted logit, one
// MUFU operation per side and column; u² stands for e^(t_y)). The move to larger maxima scales r
// with S_y. Tame rows only; the others go to the cluster kernel, as Jefferys'.
struct HellingerCentredPolicy {
  static constexpr int kStats = 1;  // H
  static constexpr int kLossStats = 1;
  static constexpr int kOnePass = 1;  // r
  static constexpr bool kCentredRecords = true;
  static constexpr bool kExactS = false;
  // A record in the one-pass sums' layout: r, then S_y = a, S_x = b.
  __device__ static math::HellingerRecord load(const float* v) { return {v[1], v[2], v[0]}; }
  __device__ static void store(const math::HellingerRecord& r, float* v) {
    v[0] = r.r;
    v[1] = r.a;
    v[2] = r.b;
  }
  template <int kN, bool kWhole>
  __device__ static void centred_chunk(const float (&ty)[kN], const float (&tx)[kN], int n, float* part) {
    float u[kN] = {}, w[kN] = {};
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (kWhole || k < n) {
        u[k] = math::f_softmax_exp_half_ftz(ty[k]);
        w[k] = math::f_softmax_exp_half_ftz(tx[k]);
      }
    }
    store(math::hellinger_chunk_record<kN>(u, w), part);
  }
  __device__ static void merge_records(float* run, const float* part) {
    store(math::hellinger_merge(load(run), load(part)), run);
  }
  __device__ static void rescale_one_pass(float (&a)[kOnePass], float, float fy, float, float, float, float) {
    a[0] = a[0] * fy;
  }
  __device__ static void stats_from_one_pass(const float* sums, float sy, float, float, float, float (&st)[kStats]) {
    st[0] = math::hellinger_record_loss(math::HellingerRecord{sy, 0.0f, sums[0]});
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return {st[0], GradMode::values, coef};
  }
};

// The one-pass sums of Jefferys' gradient statistics (JefferysPolicy::GradOnePass): K_p = KL(p||q)
// and K_q = KL(q||p), each by kernels/math/kl.hpp's one-pass form (A_p = sum e_y (t_y - t_x) 2^-64,
// A_q = sum e_x (t_x - t_y) 2^-64), summed with S in the pass and exchange that give S
// (one_exchange_row); an exchange policy of one_pass_sums and reduce_one_exchange, as a one-pass
// row's. Only the gradients read them: the loss keeps its sum of (p - q) d (see JefferysPolicy).
struct JefferysGradOnePass {
  static constexpr int kOnePass = 2;  // A_p, A_q
  static constexpr bool kTameFactorsLinearInT = true;  // (e_y, t_y - t_x), (e_x, t_x - t_y)
  static constexpr bool kExactS = false;
  __device__ static void one_pass_terms(float ty, float tx, float ey, float ex, float (&out)[kOnePass]) {
    out[0] = math::kl_one_pass_term(ey, ty, tx);
    out[1] = math::kl_one_pass_term(ex, tx, ty);
  }
  __device__ static void one_pass_factors_tame(float ty, float tx, float ey, float ex, float (&a)[kOnePass],
                                               float (&b)[kOnePass]) {
    math::kl_one_pass_factors_tame(ey, ty, tx, a[0], b[0]);
    math::kl_one_pass_factors_tame(ex, tx, ty, a[1], b[1]);
  }
  __device__ static void rescale_one_pass(float (&a)[kOnePass], float sy, float fy, float dy, float dx, float sx,
                                          float fx) {
    a[0] = math::kl_one_pass_rescale(a[0], sy, fy, dy, dx);
    a[1] = math::kl_one_pass_rescale(a[1], sx, fx, dx, dy);
  }
  // The gradient statistics of JefferysPolicy (st[0], the loss, is summed by the gradient pass;
  // P_S and Q_S are the support form's and unread here).
  __device__ static void grad_stats(const float* sums, float sy, float log_sy, float sx, float log_sx, float (&st)[5]) {
    st[0] = 0.0f;
    st[1] = math::kl_from_one_pass(sums[0], sy, log_sy, log_sx);
    st[2] = math::kl_from_one_pass(sums[1], sx, log_sx, log_sy);
    st[3] = 0.0f;
    st[4] = 0.0f;
  }
};

struct JefferysPolicy {
  static constexpr int kStats = 5;  // ell, K_p^S, K_q^S, P_S, Q_S
  static constexpr int kLossStats = 1;
  // No one-pass form of the loss: the sum (p - q) d is accurate relative to sum |p - q| |d|, which
  // is far below what K_p + K_q from the one-pass sums can resolve when p ~ q (the gate's
  // near_one_hot and partial_ties cases failed by up to 2e3 bounds: bench/RESULTS.md, step 5).
  static constexpr int kOnePass = 0;
  // The gradients' K_p and K_q have the absolute floor the one-pass forms need (their scale is
  // KL's loss scale, docs/tolerances.md): on the plain paths (no support mask; one_exchange_row)
  // the kernels with gradients take them from one-pass sums with S, and a tame row's gradient
  // pass also sums the loss (two passes after the scan instead of three).
  using GradOnePass = JefferysGradOnePass;
  static constexpr bool kExactS = false;
  template <bool kTame = false>
  __device__ static void terms(const Column& c, float (&out)[kStats]) {
    if constexpr (kTame) {  // a plain path: every column in the support
      out[0] = math::jefferys_term_finite(c.p, c.q, c.lp, c.lq);
      out[1] = math::kl_term_finite(c.p, c.lp, c.lq);
      out[2] = math::kl_term_finite(c.q, c.lq, c.lp);
    } else {
      out[0] = (c.s ? math::jefferys_term(c.p, c.q, c.lp, c.lq) : 0.0f);
      out[1] = (c.s ? math::kl_term(c.p, c.lp, c.lq) : 0.0f);
      out[2] = (c.s ? math::kl_term(c.q, c.lq, c.lp) : 0.0f);
    }
    out[3] = (c.s ? c.p : 0.0f);
    out[4] = (c.s ? c.q : 0.0f);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return finite_or_nan(st[0], coef);
  }
  template <bool kTame = false>
  __device__ static void grads(const Column& c, const float* st, const RowOptions& o, float f, float& gp, float& gq) {
    const math::JefferysStats js{st[1], st[2], st[3], st[4]};
    if constexpr (kTame) {  // a plain path: no support mask
      gp = f * math::jefferys_grad_p_finite(c.p, c.q, c.lp, c.lq, js);
      gq = f * math::jefferys_grad_q_finite(c.p, c.q, c.lp, c.lq, js);
    } else if (o.has_support) {
      gp = f * math::jefferys_support_grad_p(c.p, c.q, c.lp, c.lq, c.s, js);
      gq = f * math::jefferys_support_grad_q(c.p, c.q, c.lp, c.lq, c.s, js);
    } else {
      gp = f * math::jefferys_grad_p(c.p, c.q, c.lp, c.lq, js);
      gq = f * math::jefferys_grad_q(c.p, c.q, c.lp, c.lq, js);
    }
  }
};

struct CrossEntropyPolicy {
  static constexpr int kStats = 1;  // ce
  static constexpr int kLossStats = 1;
  static constexpr int kOnePass = 1;  // B
  static constexpr bool kExactS = false;
  __device__ static void one_pass_terms(float ty, float tx, float ey, float, float (&out)[kOnePass]) {
    out[0] = math::ce_one_pass_term(ey, ty, tx);
  }
  __device__ static void one_pass_factors_tame(float, float tx, float ey, float, float (&a)[kOnePass],
                                               float (&b)[kOnePass]) {
    math::ce_one_pass_factors_tame(ey, tx, a[0], b[0]);
  }
  __device__ static void stats_from_one_pass(const float* sums, float sy, float, float, float log_sx,
                                             float (&st)[kStats]) {
    st[0] = math::ce_from_one_pass(sums[0], sy, log_sx);
  }
  __device__ static void rescale_one_pass(float (&b)[kOnePass], float sy, float fy, float, float dx, float, float) {
    b[0] = math::ce_one_pass_rescale(b[0], sy, fy, dx);
  }
  template <bool kTame = false>
  __device__ static void terms(const Column& c, float (&out)[kStats]) {
    out[0] = kTame ? math::ce_term_finite(c.p, c.lq) : math::ce_term(c.p, c.lp, c.lq);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions& o) {
    const float ce = st[0];
    if (!o.capped) return finite_or_nan(ce, coef);
    const float ell = math::capped_ce(ce, o.max_loss, o.scaling_factor);
    const float slope = math::capped_ce_slope(ce, o.max_loss, o.scaling_factor);
    if (slope == 0.0f) return {ell, GradMode::zero, 0.0f};  // the cap is flat here
    return {ell, GradMode::values, coef * slope};
  }
  using TameGradRow = math::TameGradRow;  // (as KlPolicy's)
  __device__ static TameGradRow tame_grad_row(float log_sy, float log_sx, const float* st, float f) {
    return math::ce_tame_grad_row(log_sy, log_sx, math::CeStats{st[0]}, f);
  }
  __device__ static void grads_tame_shifted(float ty, float tx, const TameGradRow& r, float& gp, float& gq) {
    math::ce_grads_tame(ty, tx, r, gp, gq);
  }
  template <bool kTame = false>
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::CeStats cs{st[0]};
    gp = f * (kTame ? math::ce_grad_p_finite(c.p, c.lq, cs) : math::ce_grad_p(c.p, c.lp, c.lq, cs));
    gq = f * math::ce_grad_q(c.p, c.q);
  }
};

struct JensenShannonPolicy {
  static constexpr int kStats = 2;  // J_p, J_q
  static constexpr int kLossStats = 2;  // the loss reads both
  static constexpr int kOnePass = 0;  // needs p and q per column: the statistics pass
  static constexpr bool kExactS = false;
  template <bool kTame = false>
  __device__ static void terms(const Column& c, float (&out)[kStats]) {
    const math::JsRatios e = math::js_log_ratios(c.lp, c.lq);
    out[0] = kTame ? math::js_half_term_finite(c.p, e.ep) : math::js_half_term(c.p, c.lp, e.ep, c.s);
    out[1] = kTame ? math::js_half_term_finite(c.q, e.eq) : math::js_half_term(c.q, c.lq, e.eq, c.s);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return {math::js_loss(math::JsStats{st[0], st[1]}), GradMode::values, coef};
  }
  template <bool kTame = false>
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::JsRatios e = math::js_log_ratios(c.lp, c.lq);
    gp = f * (kTame ? math::js_grad_finite(c.p, e.ep, st[0]) : math::js_grad(c.p, e.ep, c.s, st[0]));
    gq = f * (kTame ? math::js_grad_finite(c.q, e.eq, st[1]) : math::js_grad(c.q, e.eq, c.s, st[1]));
  }
};

// The one-pass sum of Hellinger's gradient statistics (HellingerPolicy::GradOnePass):
// sum exp((t_y + t_x) / 2), which with S gives H_p = H_q = (1 - B) / 2 (kernels/math/hellinger.hpp),
// summed with S in the pass and exchange that give S, as JefferysGradOnePass. The tame terms are
// summed as they are (factor 1, kTameSumScale 1: no 2^-64, they are at most 1), so a tame chunk's
// sum has S's operations and order.
struct HellingerGradOnePass {
  static constexpr int kOnePass = 1;  // sum b
  static constexpr bool kExactS = false;
  static constexpr float kTameSumScale = 1.0f;
  __device__ static void one_pass_terms(float ty, float tx, float, float, float (&out)[kOnePass]) {
    out[0] = math::hellinger_one_pass_term<false>(ty, tx);
  }
  __device__ static void one_pass_factors_tame(float ty, float tx, float, float, float (&a)[kOnePass],
                                               float (&b)[kOnePass]) {
    a[0] = math::hellinger_one_pass_term<true>(ty, tx);
    b[0] = 1.0f;
  }
  __device__ static void rescale_one_pass(float (&a)[kOnePass], float, float, float dy, float dx, float, float) {
    a[0] = math::hellinger_one_pass_rescale(a[0], dy, dx);
  }
  // The gradient statistics of HellingerPolicy (st[0], the loss, is summed by the gradient pass).
  __device__ static void grad_stats(const float* sums, float sy, float, float sx, float, float (&st)[3]) {
    const float h = math::hellinger_h_from_one_pass(sums[0], sy, sx);
    st[0] = 0.0f;
    st[1] = h;
    st[2] = h;
  }
};

struct HellingerPolicy {
  static constexpr int kStats = 3;  // ell, H_p, H_q
  static constexpr int kLossStats = 1;
  static constexpr int kOnePass = 0;  // needs p and q per column: the statistics pass
  // The gradients' H_p = H_q have the absolute floor their one-pass form needs (docs/tolerances.md,
  // "Hellinger's gradient statistics"): on the plain paths the kernels with gradients take them
  // with S, and a tame row's gradient pass sums the loss (as Jefferys').
  using GradOnePass = HellingerGradOnePass;
  static constexpr bool kExactS = false;
  // A tame column's roots by one fma of the shifted logit, p and q their squares (TameFold above).
  static constexpr TameFold kTameFold = TameFold::roots;
  template <bool kTame = false, class C>
  __device__ static void terms(const C& c, float (&out)[kStats]) {
    const float rp = root_p(c), rq = root_q(c);
    out[0] = math::hellinger_term(rp, rq, c.s);
    out[1] = math::hellinger_h(rp, rq, c.s);
    out[2] = math::hellinger_h(rq, rp, c.s);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return {st[0], GradMode::values, coef};
  }
  template <bool kTame = false, class C>
  __device__ static void grads(const C& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::HellingerStats hs{st[1], st[2]};
    const float rp = root_p(c), rq = root_q(c);
    gp = f * math::hellinger_grad_p(c.p, rp, rq, c.s, hs);
    gq = f * math::hellinger_grad_q(c.q, rp, rq, c.s, hs);
  }
};

struct TotalVariationPolicy {
  static constexpr int kStats = 7;  // sum |p - q|, P+, P-, P0, Q+, Q-, Q0
  static constexpr int kLossStats = 1;
  static constexpr int kOnePass = 0;  // needs p and q per column: the statistics pass
  // S exact (FixedSum): two columns swapped between the rows must tie bitwise, or sgn(p - q)
  // is decided by summation-order noise (docs/semantics.md). Every other policy sums S in float.
  static constexpr bool kExactS = true;
  // A tame column's p and q by one fma of the shifted logit (TameFold above): its terms and
  // gradients read p and q only.
  static constexpr TameFold kTameFold = TameFold::probs;
  template <bool kTame = false>
  __device__ static void terms(const Column& c, float (&out)[kStats]) {
    out[0] = math::tv_abs_term(c.p, c.q, c.s);
    out[1] = math::tv_class_mass(c.p, c.q, c.s, 1.0f, c.p);
    out[2] = math::tv_class_mass(c.p, c.q, c.s, -1.0f, c.p);
    out[3] = math::tv_class_mass(c.p, c.q, c.s, 0.0f, c.p);
    out[4] = math::tv_class_mass(c.p, c.q, c.s, 1.0f, c.q);
    out[5] = math::tv_class_mass(c.p, c.q, c.s, -1.0f, c.q);
    out[6] = math::tv_class_mass(c.p, c.q, c.s, 0.0f, c.q);
  }
  __device__ static RowResult finish(const float* st, float coef, const RowOptions&) {
    return {0.5f * st[0], GradMode::values, coef};
  }
  template <bool kTame = false>
  __device__ static void grads(const Column& c, const float* st, const RowOptions&, float f, float& gp, float& gq) {
    const math::TvStats ts{st[1], st[2], st[3], st[4], st[5], st[6]};
    gp = f * math::tv_grad_p(c.p, c.q, c.s, ts);
    gq = f * math::tv_grad_q(c.p, c.q, c.s, ts);
  }
};

// The forward-only form of a policy (the loss_only kernels, device_types.hpp row_variant): its
// statistics pass sums only the first kLossStats sums (Jefferys 1 of 5, Hellinger 1 of 3, total
// variation 1 of 7; the policy's terms(), whose other arithmetic the compiler drops), in the same
// order, so the loss is bitwise the full policy's; the kernel compiles its gradient pass out
// (kIsLossOnly). Everything else (the one-pass forms of KL and cross-entropy) is the policy's.
template <class Policy>
struct LossOnly : Policy {
  static_assert(Policy::kLossStats >= 1 && Policy::kLossStats <= Policy::kStats, "kLossStats out of range");
  static_assert(Policy::kOnePass == 0 || Policy::kLossStats == Policy::kStats,
                "the one-pass forms give every statistic at once");
  static constexpr int kStats = Policy::kLossStats;
  template <bool kTame = false, class C>
  __device__ static void terms(const C& c, float (&out)[kStats]) {
    float all[Policy::kStats];
    Policy::template terms<kTame>(c, all);
#pragma unroll
    for (int k = 0; k < kStats; ++k) out[k] = all[k];
  }
  // The policy's finish, which reads only the loss's sums (the others are passed as 0).
  __device__ static RowResult finish(const float* st, float coef, const RowOptions& o) {
    float all[Policy::kStats] = {};
#pragma unroll
    for (int k = 0; k < kStats; ++k) all[k] = st[k];
    return Policy::finish(all, coef, o);
  }
};

// Whether a policy has gradient forms of tame rows from the shifted logits (TameGradRow,
// tame_grad_row, grads_tame_shifted: KL, the temperature KL row and cross-entropy), which the
// tame log-softmax path of gradient_chunk takes instead of make_column and grads<true>.
template <class Policy, class = void>
inline constexpr bool kHasTameShiftedGrads = false;
template <class Policy>
inline constexpr bool kHasTameShiftedGrads<Policy, std::void_t<typename Policy::TameGradRow>> = true;

// How a tame log-softmax column of a policy is formed (Policy::kTameFold, else TameFold::none:
// row_columns.cuh make_column's kFold).
template <class Policy, class = void>
inline constexpr TameFold kTameFoldOf = TameFold::none;
template <class Policy>
inline constexpr TameFold kTameFoldOf<Policy, std::void_t<decltype(Policy::kTameFold)>> = Policy::kTameFold;

// Whether the streamed kernel's group loop holds the records' centres (Policy::Centre, with the
// centred_chunk and merge_records overloads that take and give them) instead of recomputing them
// in every merge.
template <class Policy, class = void>
inline constexpr bool kHoldsCentres = false;
template <class Policy>
inline constexpr bool kHoldsCentres<Policy, std::void_t<typename Policy::Centre>> = true;

template <class Policy>
inline constexpr bool kIsLossOnly = false;
template <class Policy>
inline constexpr bool kIsLossOnly<LossOnly<Policy>> = true;

// Whether a kernel with gradients takes the policy's gradient statistics from one-pass sums
// (Policy::GradOnePass; on the plain paths, no support mask: one_exchange_row).
template <class Policy, class = void>
inline constexpr bool kDeclaresGradOnePass = false;
template <class Policy>
inline constexpr bool kDeclaresGradOnePass<Policy, std::void_t<typename Policy::GradOnePass>> = true;
template <class Policy>
inline constexpr bool kHasGradOnePass = !kIsLossOnly<Policy> && kDeclaresGradOnePass<Policy>;

// Whether a policy's one-pass sums are centred records (JefferysCentredPolicy,
// HellingerCentredPolicy): merged by the policy's merge_records wherever other policies' sums are
// added.
template <class Policy, class = void>
inline constexpr bool kCentredRecords = false;
template <class Policy>
inline constexpr bool kCentredRecords<Policy, std::void_t<decltype(Policy::kCentredRecords)>> = Policy::kCentredRecords;

// run <- run combined with part, for the kOnePass + 2 one-pass sums of a policy (its own, then
// S_y, S_x) at the same maxima: added, or, for centred records, merged (Policy::merge_records).
template <class Policy>
__device__ __forceinline__ void merge_one_pass_sums(float* run, const float* part) {
  if constexpr (kCentredRecords<Policy>) {
    Policy::merge_records(run, part);
  } else {
#pragma unroll
    for (int k = 0; k < Policy::kOnePass + 2; ++k) run[k] = run[k] + part[k];
  }
}

// The factor by which one_pass_sums scales a tame thread's sum of one_pass_factors_tame products:
// 2^-64 for the KL-type sums (kernels/math/kl.hpp kl_one_pass_factors_tame), else the exchange
// policy's kTameSumScale.
template <class Policy, class = void>
inline constexpr float kTameSumScale = math::kOnePassDown;
template <class Policy>
inline constexpr float kTameSumScale<Policy, std::void_t<decltype(Policy::kTameSumScale)>> = Policy::kTameSumScale;

// Whether a policy's one_pass_factors_tame is (e, a factor linear in t_y, t_x): KL's (e_y, t_y - t_x),
// Jefferys' two such, cross-entropy's (e_y, t_x). Only then may a T = 2^k kernel sum the factors in
// units of T and scale once (one_pass_chunk, math::folds_into_one_pass_sums). A policy declares it
// with kTameFactorsLinearInT; a policy with T = 2^k kernels that does not is a compile error there.
template <class Policy, class = void>
inline constexpr bool kTameFactorsLinearInT = false;
template <class Policy>
inline constexpr bool kTameFactorsLinearInT<Policy, std::void_t<decltype(Policy::kTameFactorsLinearInT)>> =
    Policy::kTameFactorsLinearInT;

}  // namespace divcheck::cuda

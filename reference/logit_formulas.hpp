// Internal to the reference (templated; included only by .cpp files): the per-position
// formulas of the logit-level divergences, exactly as docs/semantics.md writes them, evaluated
// in R on two log-softmax rows, each with its float32 error bound (reference/running_error.hpp).
// Used by the nine logit rows (logit_divergences.cpp) and by fused-linear (fused_linear.cpp).
//
// The R values of the gradients are evaluated through reference/centering.hpp (the same math
// as the forms of docs/semantics.md, without their 1 - sum cancellation); the error bounds are
// those of the forms as docs/semantics.md writes them, which is what a float32 kernel
// evaluates (docs/tolerances.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "reference/centering.hpp"
#include "reference/real_types.hpp"
#include "reference/running_error.hpp"
#include "reference/softmax.hpp"

namespace divcheck::ref {

enum class Status { finite, infinite, constant };

// Per-position result of a formula: l, and dl/dz on both sides (value in R, error bound, and
// the discontinuity allowance before the factor w g / T).
template <class R>
struct PositionScratch {
  R loss = 0;
  Err loss_err;
  std::vector<R> gp, gq;
  std::vector<double> gp_e, gq_e, jp, jq;
  std::vector<R> aux_p, aux_q;  // JS: e^p, e^q; Hellinger: sqrt p, sqrt q; TV: sgn
  std::vector<Err> aux_p_err, aux_q_err;  // JS: error bounds of e^p, e^q
  Centering<R> cen_p, cen_q;              // cancellation-free gradient values, p and q side
  void resize(std::int64_t n) {
    auto s = static_cast<std::size_t>(n);
    gp.resize(s);
    gq.resize(s);
    gp_e.resize(s);
    gq_e.resize(s);
    jp.assign(s, 0.0);
    jq.assign(s, 0.0);
    aux_p.resize(s);
    aux_q.resize(s);
    aux_p_err.resize(s);
    aux_q_err.resize(s);
  }
};

template <class R>
class LogitFormulas {
 public:
  LogitFormulas(const SoftmaxRow<R>& P, const SoftmaxRow<R>& Q, const std::uint8_t* support, bool full,
                std::int64_t V, PositionScratch<R>& out)
      : P_(P), Q_(Q), s_(support), full_(full), V_(V), o_(out) {}

  bool in_s(std::int64_t v) const { return full_ || s_[v] != 0; }
  // p_v = exp(lp_v): relative error a_v + 1, plus the underflow term of the exp; exactly 1 for
  // the one column of a point mass (reference/softmax.hpp).
  static Err prob_err(const SoftmaxRow<R>& S, std::int64_t v) {
    if (S.zero[v]) return Err{};
    if (S.point_mass) return exact(1.0);
    return Err{S.pd[v], S.pd[v] * (S.a[v] + 1.0) + kTiny};
  }
  Err pv(std::int64_t v) const { return prob_err(P_, v); }
  Err qv(std::int64_t v) const { return prob_err(Q_, v); }
  Err lp(std::int64_t v) const { return {P_.lpd[v], P_.a[v]}; }
  Err lq(std::int64_t v) const { return {Q_.lpd[v], Q_.a[v]}; }
  Err dv(std::int64_t v) const { return sub(lp(v), lq(v)); }
  void set_p(std::int64_t v, const R& g, const Err& e) {
    o_.gp[v] = g;
    o_.gp_e[v] = e.e;
  }
  void set_q(std::int64_t v, const R& g, const Err& e) {
    o_.gq[v] = g;
    o_.gq_e[v] = e.e;
  }

  // KL(p||q) = sum p d; dl/dx = q - p; dl/dy = p (d - l).
  Status kl() {
    for (std::int64_t v = 0; v < V_; ++v)
      if (!P_.zero[v] && Q_.zero[v]) return Status::infinite;
    R l = 0;
    ErrSum ls;
    for (std::int64_t v = 0; v < V_; ++v) {
      if (P_.zero[v]) continue;
      l += P_.p[v] * (P_.lp[v] - Q_.lp[v]);
      ls.add(mul(pv(v), dv(v)));
    }
    finish_loss(l, ls);
    const Err L = o_.loss_err;
    // p (d - l) = X_v - p_v sum X with X = p d.
    centre_single(o_.cen_p, P_, [&](std::int64_t v) { return R(P_.p[v] * (P_.lp[v] - Q_.lp[v])); });
    for (std::int64_t v = 0; v < V_; ++v) {
      set_q(v, Q_.p[v] - P_.p[v], sub(qv(v), pv(v)));
      if (P_.zero[v])
        set_p(v, R(0), Err{});
      else
        set_p(v, o_.cen_p.at(v), mul(pv(v), sub(dv(v), L)));
    }
    return Status::finite;
  }

  // Jefferys sum_S (p - q) d with the full-support and support forms of docs/semantics.md.
  // `unit` = (c + sigma) u: the loss term's second-order term (mul2), for columns where p - q
  // and d are both rounding noise (docs/tolerances.md, "Products of two noisy factors").
  Status jefferys(double unit) {
    for (std::int64_t v = 0; v < V_; ++v)
      if (in_s(v) && P_.zero[v] != Q_.zero[v]) return Status::infinite;
    R l = 0;
    ErrSum ls, kps, kqs, pss, qss;
    for (std::int64_t v = 0; v < V_; ++v) {
      if (!in_s(v) || P_.zero[v]) continue;  // in S, P_.zero == Q_.zero here
      const R d = P_.lp[v] - Q_.lp[v];
      l += (P_.p[v] - Q_.p[v]) * d;
      const Err D = dv(v);
      ls.add(mul2(sub(pv(v), qv(v)), D, unit));
      kps.add(mul(pv(v), D));
      kqs.add(mul(qv(v), D));
      pss.add(pv(v));
      qss.add(qv(v));
    }
    finish_loss(l, ls);
    const Err KP = kps.get();
    const Err KQ = -kqs.get();
    if (full_) {
      // p (d - K_p) = X_v - p_v sum X with X = p d; q (-d - K_q) likewise with X = -q d.
      centre_single(o_.cen_p, P_, [&](std::int64_t v) { return R(P_.p[v] * (P_.lp[v] - Q_.lp[v])); });
      centre_single(o_.cen_q, Q_, [&](std::int64_t v) { return R(Q_.p[v] * (Q_.lp[v] - P_.lp[v])); });
      for (std::int64_t v = 0; v < V_; ++v) {
        if (P_.zero[v]) {  // then Q_.zero[v] too
          set_p(v, R(0), Err{});
          set_q(v, R(0), Err{});
          continue;
        }
        const Err D = dv(v);
        set_p(v, o_.cen_p.at(v) + (P_.p[v] - Q_.p[v]), add(mul(pv(v), sub(D, KP)), sub(pv(v), qv(v))));
        set_q(v, o_.cen_q.at(v) + (Q_.p[v] - P_.p[v]), add(mul(qv(v), sub(-D, KQ)), sub(qv(v), pv(v))));
      }
      return Status::finite;
    }
    // Support form: dl/dy_v = s_v (p - q + p d) - p (K_p + P_S - Q_S),
    //               dl/dx_v = s_v (q - p - q d) + q (-K_q + P_S - Q_S).
    // Both are X_v - w_v sum X: X = s (p - q + p d), w = p; X = s (q - p - q d), w = q. Split
    // as X = s w + z: class constant 1 on the support, 0 off it.
    const Err PSQS = sub(pss.get(), qss.get());
    const Err CP = add(KP, PSQS);
    const Err CQ = add(-KQ, PSQS);
    o_.cen_p.begin(V_, {R(0), R(1), R(0)}, 2);
    o_.cen_q.begin(V_, {R(0), R(1), R(0)}, 2);
    for (std::int64_t v = 0; v < V_; ++v) {
      const bool s = s_[v] != 0;
      if (!s || P_.zero[v]) {  // in S, a zero p means a zero q as well (else l = +inf)
        o_.cen_p.set(v, P_.zero[v] ? R(0) : P_.p[v], s ? 1 : 0, R(0));
        o_.cen_q.set(v, Q_.zero[v] ? R(0) : Q_.p[v], s ? 1 : 0, R(0));
        continue;
      }
      const R d = P_.lp[v] - Q_.lp[v];
      o_.cen_p.set(v, P_.p[v], 1, P_.p[v] * d - Q_.p[v]);
      o_.cen_q.set(v, Q_.p[v], 1, -(Q_.p[v] * d) - P_.p[v]);
    }
    o_.cen_p.finish();
    o_.cen_q.finish();
    for (std::int64_t v = 0; v < V_; ++v) {
      Err GP = -mul(pv(v), CP);
      Err GQ = mul(qv(v), CQ);
      if (s_[v] != 0 && !P_.zero[v]) {
        const Err D = dv(v);
        GP = add(add(sub(pv(v), qv(v)), mul(pv(v), D)), GP);
        GQ = add(sub(sub(qv(v), pv(v)), mul(qv(v), D)), GQ);
      }
      set_p(v, P_.zero[v] ? R(0) : o_.cen_p.at(v), GP);
      set_q(v, Q_.zero[v] ? R(0) : o_.cen_q.at(v), GQ);
    }
    return Status::finite;
  }

  // Cross-entropy ce = -sum p lq; optionally capped l = M tanh(k ce / M).
  Status cross_entropy(const std::optional<double>& max_loss, double scaling) {
    bool inf = false;
    for (std::int64_t v = 0; v < V_; ++v)
      if (!P_.zero[v] && Q_.zero[v]) inf = true;
    if (inf) {
      if (!max_loss) return Status::infinite;
      o_.loss = R(*max_loss);  // tanh(+inf) = 1
      o_.loss_err = param_err(*max_loss);
      return Status::constant;
    }
    R ce = 0;
    ErrSum cs;
    for (std::int64_t v = 0; v < V_; ++v) {
      if (P_.zero[v]) continue;
      ce -= P_.p[v] * Q_.lp[v];
      cs.add(mul(pv(v), lq(v)));
    }
    const Err CE = {to_double(ce), cs.get().e};
    R dl = 1;  // dl/dce
    Err DL = exact(1.0);
    if (max_loss) {
      const R M = R(*max_loss), k = R(scaling);
      const R x = k * ce / M;
      o_.loss = M * tanh(x);
      const R e2 = exp(-2 * abs(x));
      dl = k * 4 * e2 / ((1 + e2) * (1 + e2));  // k sech^2(x), never 1 - tanh^2
      const Err Me = param_err(*max_loss), Ke = param_err(scaling);
      const Err X = div(mul(Ke, CE), Me);
      const double xd = X.v, th = std::tanh(xd), e2d = std::exp(-2.0 * std::fabs(xd));
      const Err TH = apply(th, 1.0 - th * th, X);
      o_.loss_err = mul(Me, TH);
      o_.loss_err.v = to_double(o_.loss);
      const Err E2 = apply(e2d, 2.0 * e2d, X);
      const Err ONE_E2 = add(exact(1.0), E2);
      DL = mul(Ke, div(scaled_exact(E2, 4.0), mul(ONE_E2, ONE_E2)));
    } else {
      o_.loss = ce;
      o_.loss_err = CE;
    }
    // -p (lq + ce) = -(X_v - p_v sum X) with X = p lq.
    centre_single(o_.cen_p, P_, [&](std::int64_t v) { return R(P_.p[v] * Q_.lp[v]); });
    for (std::int64_t v = 0; v < V_; ++v) {
      set_q(v, dl * (Q_.p[v] - P_.p[v]), mul(DL, sub(qv(v), pv(v))));
      if (P_.zero[v])
        set_p(v, R(0), Err{});
      else
        set_p(v, dl * (-o_.cen_p.at(v)), mul(DL, -mul(pv(v), add(lq(v), CE))));
    }
    return Status::finite;
  }

  // e^p = log(2p / (p + q)) is a function of delta = lp - lq (docs/semantics.md). js_column
  // gives both sides' log-ratios of one column with p, q > 0, each accurate to R's precision:
  // e^p, e^q and their distances to ln 2, r^p = ln 2 - e^p = log1p(q / p) >= 0 and
  // r^q = log1p(p / q).
  // Two transcendental evaluations per column (the side with delta' = |delta| >= 0 is called A):
  //   |delta| < 1: e^A = -log1p(expm1(-|delta|) / 2) in [0, 0.38] (accurate near delta = 0),
  //                r^A = ln 2 - e^A in [0.31, ln 2];
  //   |delta| >= 1: r^A = log1p(exp(-|delta|)) in (0, 0.32] (accurate for q << p),
  //                e^A = ln 2 - r^A in [0.37, ln 2);
  //   then e^B = e^A - |delta| and r^B = r^A + |delta| (no cancellation in either case).
  struct JsColumn {
    R ep, eq, rp, rq;
  };
  static JsColumn js_column(const R& delta, const R& ln2) {
    const bool p_side = delta >= 0;
    const R ad = p_side ? delta : R(-delta);
    R ea, ra;
    if (ad < 1) {
      ea = -log1p(expm1(-ad) / 2);
      ra = ln2 - ea;
    } else {
      ra = log1p(exp(-ad));
      ea = ln2 - ra;
    }
    const R eb = ea - ad, rb = ra + ad;
    return p_side ? JsColumn{ea, eb, ra, rb} : JsColumn{eb, ea, rb, ra};
  }
  // The error bounds of e^p, e^q of a float32 evaluation in the accurate form: with a = |d|, the
  // side with d' = a >= 0 as -log1p(expm1(-a) / 2), the other as that minus a. (The kernels
  // evaluate log 2 - log(1 + exp(-a)) with fast functions, kernels/math/jensen_shannon.hpp;
  // docs/tolerances.md "c per row" shows c times this scale covers that form.)
  struct JsRatioErrs {
    Err ep, eq;
  };
  static JsRatioErrs js_ratio_errs(const Err& D) {
    const Err A{std::fabs(D.v), D.e};
    const Err X = apply(std::expm1(-A.v), std::exp(-A.v), A);
    const Err H = scaled_exact(X, 0.5);
    const Err big = -apply(std::log1p(H.v), 1.0 / (1.0 + H.v), H);
    const Err small = sub(big, A);
    return D.v < 0 ? JsRatioErrs{small, big} : JsRatioErrs{big, small};
  }

  // Jensen-Shannon sum_S p e^p / 2 + q e^q / 2; dl/dy = p (s e^p - J_p) / 2, dl/dx likewise.
  // The gradient values: p (s e^p - J_p) = X_v - p_v sum X with X = s p e^p (centering.hpp),
  // split as X = c p + z with c = ln 2, z = -p r^p where e^p is within ln 2 / 2 of ln 2, else
  // c = 0, z = p e^p: the remainders stay small where the cancellation lives (a side that puts
  // its mass where the other has almost none has e ~ ln 2 on all of it).
  Status js() {
    const R ln2 = log(R(2));
    const R half_ln2 = ln2 / 2, half = R(1) / 2;
    const double ln2d = std::log(2.0);
    R l = 0;
    ErrSum ls, jps, jqs;
    std::vector<Err>& ep_err = o_.aux_p_err;
    std::vector<Err>& eq_err = o_.aux_q_err;
    o_.cen_p.begin(V_, {R(0), ln2, R(0)}, 2);
    o_.cen_q.begin(V_, {R(0), ln2, R(0)}, 2);
    auto split = [&](Centering<R>& cen, std::int64_t v, const R& w, const R& e, const R& r) {
      if (!in_s(v))
        cen.set(v, w, 0, R(0));
      else if (r < half_ln2)
        cen.set(v, w, 1, -(w * r));
      else
        cen.set(v, w, 0, w * e);
    };
    for (std::int64_t v = 0; v < V_; ++v) {
      o_.aux_p[v] = 0;
      o_.aux_q[v] = 0;
      ep_err[v] = Err{};
      eq_err[v] = Err{};
      if (P_.zero[v] && Q_.zero[v]) continue;
      if (P_.zero[v] || Q_.zero[v]) {  // one side zero: the other's ratio is log 2 (delta = +-inf)
        if (!P_.zero[v]) {
          o_.aux_p[v] = ln2;
          ep_err[v] = rounded(ln2d);
          split(o_.cen_p, v, P_.p[v], ln2, R(0));
        } else {
          o_.aux_q[v] = ln2;
          eq_err[v] = rounded(ln2d);
          split(o_.cen_q, v, Q_.p[v], ln2, R(0));
        }
      } else {
        const JsColumn col = js_column(P_.lp[v] - Q_.lp[v], ln2);
        o_.aux_p[v] = col.ep;
        o_.aux_q[v] = col.eq;
        split(o_.cen_p, v, P_.p[v], col.ep, col.rp);
        split(o_.cen_q, v, Q_.p[v], col.eq, col.rq);
        // The float32 kernels evaluate both as in docs/semantics.md; their error bounds:
        const JsRatioErrs errs = js_ratio_errs(dv(v));
        ep_err[v] = errs.ep;
        eq_err[v] = errs.eq;
      }
      if (!in_s(v)) continue;
      const R tp = P_.zero[v] ? R(0) : P_.p[v] * o_.aux_p[v];
      const R tq = Q_.zero[v] ? R(0) : Q_.p[v] * o_.aux_q[v];
      l += (tp + tq) / 2;
      const Err TP = mul(pv(v), ep_err[v]), TQ = mul(qv(v), eq_err[v]);
      ls.add(scaled_exact(add(TP, TQ), 0.5));
      jps.add(TP);
      jqs.add(TQ);
    }
    finish_loss(l, ls);
    o_.cen_p.finish();
    o_.cen_q.finish();
    const Err JP = jps.get(), JQ = jqs.get();
    for (std::int64_t v = 0; v < V_; ++v) {
      const bool s = in_s(v);
      if (P_.zero[v]) {
        set_p(v, R(0), Err{});
      } else {
        set_p(v, o_.cen_p.at(v) * half, scaled_exact(mul(pv(v), sub(s ? ep_err[v] : Err{}, JP)), 0.5));
      }
      if (Q_.zero[v]) {
        set_q(v, R(0), Err{});
      } else {
        set_q(v, o_.cen_q.at(v) * half, scaled_exact(mul(qv(v), sub(s ? eq_err[v] : Err{}, JQ)), 0.5));
      }
    }
    return Status::finite;
  }

  // Squared Hellinger sum_S (sqrt p - sqrt q)^2 / 2; dl/dy = h^p_v - p sum h^p (docs/semantics.md).
  // `unit` = (c + sigma) u, for the square root's bound near 0 (running_error.hpp) and the
  // second-order term of the squared difference, which is rounding noise where sqrt p and
  // sqrt q agree to the precision of their errors (docs/tolerances.md, "Products of two noisy
  // factors").
  Status hellinger(double unit) {
    R l = 0;
    ErrSum ls, hps, hqs;
    auto sp_err = [&](std::int64_t v) { return P_.zero[v] ? Err{} : sqrt_err(pv(v), unit); };
    auto sq_err = [&](std::int64_t v) { return Q_.zero[v] ? Err{} : sqrt_err(qv(v), unit); };
    for (std::int64_t v = 0; v < V_; ++v) {
      o_.aux_p[v] = P_.zero[v] ? R(0) : sqrt(P_.p[v]);
      o_.aux_q[v] = Q_.zero[v] ? R(0) : sqrt(Q_.p[v]);
      if (!in_s(v)) continue;
      const R diff = o_.aux_p[v] - o_.aux_q[v];
      l += diff * diff / 2;
      const Err DIFF = sub(sp_err(v), sq_err(v));
      ls.add(scaled_exact(mul2(DIFF, DIFF, unit), 0.5));
      hps.add(scaled_exact(mul(DIFF, sp_err(v)), 0.5));
      hqs.add(scaled_exact(mul(DIFF, sq_err(v)), 0.5));
    }
    finish_loss(l, ls);
    const Err HP = hps.get(), HQ = hqs.get();
    // h^p_v - p_v sum h^p = X_v - p_v sum X with X = h^p = s (p - sqrt(p q)) / 2. Split X = c p + z
    // with c = 1/2, z = -sqrt(p q) / 2 where sqrt q < sqrt p / 2 (h^p / p close to 1/2), else
    // c = 0, z = h^p = s (sqrt p - sqrt q) sqrt p / 2. The q side likewise with p and q swapped.
    const R half = R(1) / 2;
    o_.cen_p.begin(V_, {R(0), half, R(0)}, 2);
    o_.cen_q.begin(V_, {R(0), half, R(0)}, 2);
    auto split = [&](Centering<R>& cen, std::int64_t v, const SoftmaxRow<R>& A, const R& ra, const R& rb) {
      if (A.zero[v]) return;  // w = 0, z = 0
      if (!in_s(v))
        cen.set(v, A.p[v], 0, R(0));
      else if (rb < ra * half)
        cen.set(v, A.p[v], 1, -(ra * rb * half));
      else
        cen.set(v, A.p[v], 0, (ra - rb) * ra * half);
    };
    for (std::int64_t v = 0; v < V_; ++v) {
      split(o_.cen_p, v, P_, o_.aux_p[v], o_.aux_q[v]);
      split(o_.cen_q, v, Q_, o_.aux_q[v], o_.aux_p[v]);
    }
    o_.cen_p.finish();
    o_.cen_q.finish();
    for (std::int64_t v = 0; v < V_; ++v) {
      const bool s = in_s(v);
      const Err DIFF = sub(sp_err(v), sq_err(v));
      Err GP = -mul(pv(v), HP), GQ = -mul(qv(v), HQ);
      if (s) {
        GP = add(scaled_exact(mul(DIFF, sp_err(v)), 0.5), GP);
        GQ = add(-scaled_exact(mul(DIFF, sq_err(v)), 0.5), GQ);
      }
      set_p(v, P_.zero[v] ? R(0) : o_.cen_p.at(v), GP);
      set_q(v, Q_.zero[v] ? R(0) : o_.cen_q.at(v), GQ);
    }
    return Status::finite;
  }

  // Total variation sum_S |p - q| / 2 with sgn(0) = 0; discontinuity allowance at near-ties.
  // amb_threshold = (c + sigma(V)) * u: a column is ambiguous when |p - q| is within the error
  // bound of a float32 p - q.
  Status tv(double amb_threshold) {
    const R half = R(1) / 2;
    R l = 0;
    ErrSum ls, sps, sqs;
    double amb_p = 0.0, amb_q = 0.0;
    for (std::int64_t v = 0; v < V_; ++v) {
      const R diff = P_.p[v] - Q_.p[v];
      const int sg = diff > 0 ? 1 : (diff < 0 ? -1 : 0);
      o_.aux_p[v] = sg;
      o_.jp[v] = 0.0;
      if (!in_s(v)) continue;
      l += abs(diff) / 2;
      const Err PV = pv(v), QV = qv(v);
      ls.add(scaled_exact(absolute(sub(PV, QV)), 0.5));
      sps.add(scaled_exact(PV, sg));
      sqs.add(scaled_exact(QV, sg));
      // Two exact probabilities (error 0: point masses) compare exactly: no ambiguity.
      if (PV.e + QV.e > 0.0 && std::fabs(to_double(diff)) <= amb_threshold * (PV.e + QV.e)) {
        o_.jp[v] = 1.0;  // ambiguous marker, turned into the allowance below
        amb_p += P_.pd[v];
        amb_q += Q_.pd[v];
      }
    }
    finish_loss(l, ls);
    const Err SP = sps.get(), SQ = sqs.get();
    // p (s sgn - sum s sgn p) = X_v - p_v sum X with X = s sgn p: per sign class (class 0: c = 0,
    // class 1: c = +1, class 2: c = -1), as kernels/math/total_variation.hpp evaluates it.
    o_.cen_p.begin(V_, {R(0), R(1), R(-1)}, 3);
    o_.cen_q.begin(V_, {R(0), R(1), R(-1)}, 3);
    for (std::int64_t v = 0; v < V_; ++v) {
      const int sg = in_s(v) ? static_cast<int>(to_double(o_.aux_p[v])) : 0;
      const int k = sg > 0 ? 1 : (sg < 0 ? 2 : 0);
      o_.cen_p.set(v, P_.zero[v] ? R(0) : P_.p[v], k, R(0));
      o_.cen_q.set(v, Q_.zero[v] ? R(0) : Q_.p[v], k, R(0));
    }
    o_.cen_p.finish();
    o_.cen_q.finish();
    for (std::int64_t v = 0; v < V_; ++v) {
      const bool s = in_s(v);
      const int sg = s ? static_cast<int>(to_double(o_.aux_p[v])) : 0;
      const double amb = o_.jp[v];
      if (P_.zero[v]) {
        set_p(v, R(0), Err{});
      } else {
        set_p(v, o_.cen_p.at(v) * half, scaled_exact(mul(pv(v), sub(exact(sg), SP)), 0.5));
      }
      if (Q_.zero[v]) {
        set_q(v, R(0), Err{});
      } else {
        set_q(v, -(o_.cen_q.at(v) * half), scaled_exact(mul(qv(v), sub(exact(sg), SQ)), 0.5));
      }
      // Flipping sgn at ambiguous columns changes dl/dy_v by at most p_v ([amb_v] + sum amb p).
      o_.jp[v] = P_.pd[v] * (amb + amb_p);
      o_.jq[v] = Q_.pd[v] * (amb + amb_q);
    }
    return Status::finite;
  }

 private:
  // One class (c = 0): z_v = x(v) for every column with a non-zero w_v = S.p[v].
  template <class F>
  void centre_single(Centering<R>& cen, const SoftmaxRow<R>& S, F x) {
    cen.begin(V_, {R(0), R(0), R(0)}, 1);
    for (std::int64_t v = 0; v < V_; ++v)
      if (!S.zero[v]) cen.set(v, S.p[v], 0, x(v));
    cen.finish();
  }
  void finish_loss(const R& l, const ErrSum& ls) {
    o_.loss = l;
    o_.loss_err = {to_double(l), ls.get().e};
  }

  const SoftmaxRow<R>& P_;
  const SoftmaxRow<R>& Q_;
  const std::uint8_t* s_;
  bool full_;
  std::int64_t V_;
  PositionScratch<R>& o_;
};

}  // namespace divcheck::ref

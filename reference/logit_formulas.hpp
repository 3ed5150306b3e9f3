// Internal to the reference (templated; included only by .cpp files): the per-position
// formulas of the logit-level divergences, exactly as docs/semantics.md writes them, evaluated
// in R on two log-softmax rows, each with its float32 error bound (reference/running_error.hpp).
// Used by the nine logit rows (logit_divergences.cpp) and by fused-linear (fused_linear.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

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
  // p_v = exp(lp_v): relative error a_v + 1, plus the underflow term of the exp.
  Err pv(std::int64_t v) const { return P_.zero[v] ? Err{} : Err{P_.pd[v], P_.pd[v] * (P_.a[v] + 1.0) + kTiny}; }
  Err qv(std::int64_t v) const { return Q_.zero[v] ? Err{} : Err{Q_.pd[v], Q_.pd[v] * (Q_.a[v] + 1.0) + kTiny}; }
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
    for (std::int64_t v = 0; v < V_; ++v) {
      set_q(v, Q_.p[v] - P_.p[v], sub(qv(v), pv(v)));
      if (P_.zero[v])
        set_p(v, R(0), Err{});
      else
        set_p(v, P_.p[v] * ((P_.lp[v] - Q_.lp[v]) - l), mul(pv(v), sub(dv(v), L)));
    }
    return Status::finite;
  }

  // Jefferys sum_S (p - q) d with the full-support and support forms of docs/semantics.md.
  Status jefferys() {
    for (std::int64_t v = 0; v < V_; ++v)
      if (in_s(v) && P_.zero[v] != Q_.zero[v]) return Status::infinite;
    R l = 0, kp = 0, kq = 0, ps = 0, qs = 0;
    ErrSum ls, kps, kqs, pss, qss;
    for (std::int64_t v = 0; v < V_; ++v) {
      if (!in_s(v) || P_.zero[v]) continue;  // in S, P_.zero == Q_.zero here
      const R d = P_.lp[v] - Q_.lp[v];
      l += (P_.p[v] - Q_.p[v]) * d;
      kp += P_.p[v] * d;
      kq -= Q_.p[v] * d;
      ps += P_.p[v];
      qs += Q_.p[v];
      const Err D = dv(v);
      ls.add(mul(sub(pv(v), qv(v)), D));
      kps.add(mul(pv(v), D));
      kqs.add(mul(qv(v), D));
      pss.add(pv(v));
      qss.add(qv(v));
    }
    finish_loss(l, ls);
    const Err KP = kps.get();
    const Err KQ = -kqs.get();
    if (full_) {
      for (std::int64_t v = 0; v < V_; ++v) {
        if (P_.zero[v]) {  // then Q_.zero[v] too
          set_p(v, R(0), Err{});
          set_q(v, R(0), Err{});
          continue;
        }
        const R d = P_.lp[v] - Q_.lp[v];
        const Err D = dv(v);
        set_p(v, P_.p[v] * (d - kp) + (P_.p[v] - Q_.p[v]), add(mul(pv(v), sub(D, KP)), sub(pv(v), qv(v))));
        set_q(v, Q_.p[v] * (-d - kq) + (Q_.p[v] - P_.p[v]), add(mul(qv(v), sub(-D, KQ)), sub(qv(v), pv(v))));
      }
      return Status::finite;
    }
    // Support form: dl/dy_v = s_v (p - q + p d) - p (K_p + P_S - Q_S),
    //               dl/dx_v = s_v (q - p - q d) + q (-K_q + P_S - Q_S).
    const R cp = kp + (ps - qs);
    const R cq = -kq + (ps - qs);
    const Err PSQS = sub(pss.get(), qss.get());
    const Err CP = add(KP, PSQS);
    const Err CQ = add(-KQ, PSQS);
    for (std::int64_t v = 0; v < V_; ++v) {
      R gpv = -(P_.zero[v] ? R(0) : P_.p[v] * cp);
      R gqv = Q_.zero[v] ? R(0) : Q_.p[v] * cq;
      Err GP = -mul(pv(v), CP);
      Err GQ = mul(qv(v), CQ);
      if (s_[v] != 0 && !P_.zero[v]) {
        const R d = P_.lp[v] - Q_.lp[v];
        const Err D = dv(v);
        gpv += (P_.p[v] - Q_.p[v]) + P_.p[v] * d;
        gqv += (Q_.p[v] - P_.p[v]) - Q_.p[v] * d;
        GP = add(add(sub(pv(v), qv(v)), mul(pv(v), D)), GP);
        GQ = add(sub(sub(qv(v), pv(v)), mul(qv(v), D)), GQ);
      }
      set_p(v, gpv, GP);
      set_q(v, gqv, GQ);
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
    for (std::int64_t v = 0; v < V_; ++v) {
      set_q(v, dl * (Q_.p[v] - P_.p[v]), mul(DL, sub(qv(v), pv(v))));
      if (P_.zero[v])
        set_p(v, R(0), Err{});
      else
        set_p(v, dl * (-(P_.p[v] * (Q_.lp[v] + ce))), mul(DL, -mul(pv(v), add(lq(v), CE))));
    }
    return Status::finite;
  }

  // e^p = log(2p / (p + q)) as a function of delta = lp - lq (docs/semantics.md).
  static R js_ratio(const R& delta, const R& ln2) {
    if (delta >= -1) return -log1p(expm1(-delta) / 2);
    return ln2 + delta - log1p(exp(delta));
  }
  static Err js_ratio_err(const Err& D, double ln2) {
    const double d = D.v;
    if (d >= -1.0) {
      const Err X = apply(std::expm1(-d), std::exp(-d), D);
      const Err H = scaled_exact(X, 0.5);
      return -apply(std::log1p(H.v), 1.0 / (1.0 + H.v), H);
    }
    const Err EX = apply(std::exp(d), std::exp(d), D);
    const Err L1 = apply(std::log1p(EX.v), 1.0 / (1.0 + EX.v), EX);
    return sub(add(rounded(ln2), D), L1);
  }

  // Jensen-Shannon sum_S p e^p / 2 + q e^q / 2; dl/dy = p (s e^p - J_p) / 2, dl/dx likewise.
  Status js() {
    const R ln2 = log(R(2));
    const double ln2d = std::log(2.0);
    R l = 0, jp = 0, jq = 0;
    ErrSum ls, jps, jqs;
    std::vector<Err>& ep_err = o_.aux_p_err;
    std::vector<Err>& eq_err = o_.aux_q_err;
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
        } else {
          o_.aux_q[v] = ln2;
          eq_err[v] = rounded(ln2d);
        }
      } else {
        // One evaluation of the delta-function per column: e^q = e^p - delta exactly, and the
        // side with the non-negative argument is computed directly (no cancellation: for
        // delta >= 0, 0 <= e^p <= delta/2, so |e^p - delta| >= delta/2).
        const R delta = P_.lp[v] - Q_.lp[v];
        if (delta >= 0) {
          o_.aux_p[v] = js_ratio(delta, ln2);
          o_.aux_q[v] = o_.aux_p[v] - delta;
        } else {
          o_.aux_q[v] = js_ratio(R(-delta), ln2);
          o_.aux_p[v] = o_.aux_q[v] + delta;
        }
        // The float32 kernel evaluates both as in docs/semantics.md; its error bounds:
        ep_err[v] = js_ratio_err(dv(v), ln2d);
        eq_err[v] = js_ratio_err(-dv(v), ln2d);
      }
      if (!in_s(v)) continue;
      const R tp = P_.zero[v] ? R(0) : P_.p[v] * o_.aux_p[v];
      const R tq = Q_.zero[v] ? R(0) : Q_.p[v] * o_.aux_q[v];
      l += (tp + tq) / 2;
      jp += tp;
      jq += tq;
      const Err TP = mul(pv(v), ep_err[v]), TQ = mul(qv(v), eq_err[v]);
      ls.add(scaled_exact(add(TP, TQ), 0.5));
      jps.add(TP);
      jqs.add(TQ);
    }
    finish_loss(l, ls);
    const Err JP = jps.get(), JQ = jqs.get();
    for (std::int64_t v = 0; v < V_; ++v) {
      const bool s = in_s(v);
      if (P_.zero[v]) {
        set_p(v, R(0), Err{});
      } else {
        set_p(v, P_.p[v] * ((s ? o_.aux_p[v] : R(0)) - jp) / 2,
              scaled_exact(mul(pv(v), sub(s ? ep_err[v] : Err{}, JP)), 0.5));
      }
      if (Q_.zero[v]) {
        set_q(v, R(0), Err{});
      } else {
        set_q(v, Q_.p[v] * ((s ? o_.aux_q[v] : R(0)) - jq) / 2,
              scaled_exact(mul(qv(v), sub(s ? eq_err[v] : Err{}, JQ)), 0.5));
      }
    }
    return Status::finite;
  }

  // Squared Hellinger sum_S (sqrt p - sqrt q)^2 / 2; dl/dy = h^p_v - p sum h^p (docs/semantics.md).
  // `unit` = (c + sigma) u, for the square root's bound near 0 (running_error.hpp).
  Status hellinger(double unit) {
    R l = 0, hp = 0, hq = 0;
    ErrSum ls, hps, hqs;
    auto sp_err = [&](std::int64_t v) { return P_.zero[v] ? Err{} : sqrt_err(pv(v), unit); };
    auto sq_err = [&](std::int64_t v) { return Q_.zero[v] ? Err{} : sqrt_err(qv(v), unit); };
    for (std::int64_t v = 0; v < V_; ++v) {
      o_.aux_p[v] = P_.zero[v] ? R(0) : sqrt(P_.p[v]);
      o_.aux_q[v] = Q_.zero[v] ? R(0) : sqrt(Q_.p[v]);
      if (!in_s(v)) continue;
      const R diff = o_.aux_p[v] - o_.aux_q[v];
      l += diff * diff / 2;
      hp += diff * o_.aux_p[v] / 2;
      hq -= diff * o_.aux_q[v] / 2;
      const Err DIFF = sub(sp_err(v), sq_err(v));
      ls.add(scaled_exact(mul(DIFF, DIFF), 0.5));
      hps.add(scaled_exact(mul(DIFF, sp_err(v)), 0.5));
      hqs.add(scaled_exact(mul(DIFF, sq_err(v)), 0.5));
    }
    finish_loss(l, ls);
    const Err HP = hps.get(), HQ = hqs.get();
    for (std::int64_t v = 0; v < V_; ++v) {
      const bool s = in_s(v);
      const R diff = o_.aux_p[v] - o_.aux_q[v];
      const Err DIFF = sub(sp_err(v), sq_err(v));
      R gpv = -(P_.zero[v] ? R(0) : P_.p[v] * hp);
      R gqv = -(Q_.zero[v] ? R(0) : Q_.p[v] * hq);
      Err GP = -mul(pv(v), HP), GQ = -mul(qv(v), HQ);
      if (s) {
        gpv += diff * o_.aux_p[v] / 2;
        gqv -= diff * o_.aux_q[v] / 2;
        GP = add(scaled_exact(mul(DIFF, sp_err(v)), 0.5), GP);
        GQ = add(-scaled_exact(mul(DIFF, sq_err(v)), 0.5), GQ);
      }
      set_p(v, gpv, GP);
      set_q(v, gqv, GQ);
    }
    return Status::finite;
  }

  // Total variation sum_S |p - q| / 2 with sgn(0) = 0; discontinuity allowance at near-ties.
  // amb_threshold = (c + sigma(V)) * u: a column is ambiguous when |p - q| is within the error
  // bound of a float32 p - q.
  Status tv(double amb_threshold) {
    R l = 0, sp = 0, sq = 0;
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
      if (sg != 0) {
        sp += sg > 0 ? P_.p[v] : R(-P_.p[v]);
        sq += sg > 0 ? Q_.p[v] : R(-Q_.p[v]);
      }
      sps.add(scaled_exact(PV, sg));
      sqs.add(scaled_exact(QV, sg));
      if (std::fabs(to_double(diff)) <= amb_threshold * (PV.e + QV.e)) {
        o_.jp[v] = 1.0;  // ambiguous marker, turned into the allowance below
        amb_p += P_.pd[v];
        amb_q += Q_.pd[v];
      }
    }
    finish_loss(l, ls);
    const Err SP = sps.get(), SQ = sqs.get();
    for (std::int64_t v = 0; v < V_; ++v) {
      const bool s = in_s(v);
      const int sg = s ? static_cast<int>(to_double(o_.aux_p[v])) : 0;
      const double amb = o_.jp[v];
      if (P_.zero[v]) {
        set_p(v, R(0), Err{});
      } else {
        set_p(v, P_.p[v] * (R(sg) - sp) / 2, scaled_exact(mul(pv(v), sub(exact(sg), SP)), 0.5));
      }
      if (Q_.zero[v]) {
        set_q(v, R(0), Err{});
      } else {
        set_q(v, -(Q_.p[v] * (R(sg) - sq)) / 2, scaled_exact(mul(qv(v), sub(exact(sg), SQ)), 0.5));
      }
      // Flipping sgn at ambiguous columns changes dl/dy_v by at most p_v ([amb_v] + sum amb p).
      o_.jp[v] = P_.pd[v] * (amb + amb_p);
      o_.jq[v] = Q_.pd[v] * (amb + amb_q);
    }
    return Status::finite;
  }

 private:
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

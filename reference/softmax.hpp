// Internal to the reference (templated on the real type; included only by .cpp files): one row's
// log-softmax in R, and the error building blocks of a float32 log-softmax (docs/tolerances.md).
//
//   m = max_v y_v (over finite logits), t_v = (y_v - m) / T, S = sum_v exp(t_v),
//   lp_v = t_v - log S, p_v = exp(t_v) / S.
//
// exp is evaluated once per element and reused for S and p. S is summed in ascending order of
// its terms, so it depends only on the multiset of logits: a row and any permutation of it get
// bitwise the same S, hence exactly equal probabilities at equal logits (exact ties under sgn,
// as in two rows that differ by a swap of columns). A -inf logit gives p_v = 0 exactly
// and lp_v = -inf; it is marked as a structural zero. Two rows with identical logits produce
// bitwise identical lp and p, which is what makes d = lp - lq exactly 0 on identical inputs.
// Subtracting the raw max before dividing by T keeps a row and its shifted copy identical too.
//
// A row with exactly one finite logit is a point mass: every float32 softmax computes t = 0
// there (z - z, whatever error z carries), exp(0) = 1, S = 1, log S = 0, so lp = 0 and p = 1
// exactly. Its error blocks are 0 (`point_mass`), which makes V = 1 rows and one-hot rows give
// exact structural zeros downstream (reference/running_error.hpp).
//
// Error blocks (units of u = 2^-24, absolute error of a float32 lp_v):
//   a_v = 2 + 2|lp_v| + E + Pe + e_v,  E = sum_u p_u |t_u|,  Pe = sum_u p_u e_u,
// where e_v is the error the logit itself carries into the softmax (0 for raw logits at T = 1;
// |z_v| + 2|t_v| for z = y / T, T != 1; the projection error for fused-linear). Derivation:
// t_v's rounding |t_v| plus e_v; S's relative error sum_u p_u (|t_u| + e_u + 1); log S's own
// rounding ln S; the final subtraction |lp_v|; with |t_v| + ln S = |lp_v|. The leading 2 also
// covers the alternative path p_v = exp(t_v) / S (relative error <= a_v + 1 either way).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/real_types.hpp"

namespace divcheck::ref {

template <class R>
struct SoftmaxRow {
  bool nan_row = false;            // a NaN or +inf logit, or no finite logit
  bool point_mass = false;         // exactly one finite logit: lp = 0, p = 1 exactly there
  std::vector<R> lp, p;            // log-probabilities, probabilities
  std::vector<std::uint8_t> zero;  // 1 where the logit is -inf (p_v = 0 by structure)
  std::vector<double> lpd, pd;     // lp, p as doubles (error analysis only)
  std::vector<double> a;           // a_v above (0 at structural zeros)
  std::vector<R> terms;            // scratch: exp(t_v) sorted for the sum S
  double ln_s = 0.0;

  void resize(std::int64_t n) {
    auto s = static_cast<std::size_t>(n);
    lp.resize(s);
    p.resize(s);
    zero.resize(s);
    lpd.resize(s);
    pd.resize(s);
    a.resize(s);
  }
};

// Row log-softmax of y[0..V). `temperature`: nullptr for T = 1 (no division), else T.
// `logit_err` (may be nullptr): e_v of the logits, see above; for T != 1 the temperature's
// |z_v| + 3|t_v| is added here (docs/tolerances.md: T's rounding, and the division or the CUDA
// kernels' product by the rounded reciprocal, math::ReciprocalTemperature, in either order).
template <class R>
void compute_softmax_row(const R* y, std::int64_t V, const R* temperature, const double* logit_err,
                         SoftmaxRow<R>& out) {
  out.resize(V);
  out.nan_row = false;
  out.point_mass = false;
  bool any_finite = false;
  std::int64_t n_finite = 0;
  R m = 0;
  for (std::int64_t v = 0; v < V; ++v) {
    const R& yv = y[v];
    if (is_nan(yv) || (is_inf(yv) && yv > 0)) {
      out.nan_row = true;
      return;
    }
    if (!is_inf(yv)) {
      if (!any_finite || yv > m) m = yv;
      any_finite = true;
      ++n_finite;
    }
  }
  out.point_mass = n_finite == 1;
  if (!any_finite) {
    out.nan_row = true;
    return;
  }
  const double inv_t = temperature ? 1.0 / to_double(*temperature) : 1.0;
  // Pass 1: t_v into lp, exp(t_v) into p, S.
  out.terms.clear();
  for (std::int64_t v = 0; v < V; ++v) {
    if (is_inf(y[v])) {  // -inf: zero probability
      out.zero[v] = 1;
      out.p[v] = 0;
      continue;
    }
    out.zero[v] = 0;
    R t = y[v] - m;
    if (temperature) t /= *temperature;
    out.lp[v] = t;
    out.p[v] = exp(t);
    out.terms.push_back(out.p[v]);
  }
  std::sort(out.terms.begin(), out.terms.end());
  R s = 0;
  for (const R& e : out.terms) s += e;
  const R log_s = log(s);
  const R inv_s = R(1) / s;
  out.ln_s = to_double(log_s);
  // Pass 2: lp, p, and the error blocks.
  double e_sum = 0.0, pe_sum = 0.0;
  std::vector<double>& ev = out.a;  // holds e_v until the final pass
  for (std::int64_t v = 0; v < V; ++v) {
    if (out.zero[v]) {
      out.lp[v] = -r_inf<R>();
      out.lpd[v] = -std::numeric_limits<double>::infinity();
      out.pd[v] = 0.0;
      ev[v] = 0.0;
      continue;
    }
    const double t_d = to_double(out.lp[v]);
    out.lp[v] -= log_s;
    out.p[v] *= inv_s;
    out.lpd[v] = to_double(out.lp[v]);
    out.pd[v] = to_double(out.p[v]);
    double e = logit_err ? logit_err[v] : 0.0;
    if (temperature) e += std::fabs(to_double(y[v]) * inv_t) + 3.0 * std::fabs(t_d);
    ev[v] = e;
    e_sum += out.pd[v] * std::fabs(t_d);
    pe_sum += out.pd[v] * e;
  }
  for (std::int64_t v = 0; v < V; ++v)
    if (!out.zero[v]) out.a[v] = out.point_mass ? 0.0 : 2.0 + 2.0 * std::fabs(out.lpd[v]) + e_sum + pe_sum + ev[v];
}

}  // namespace divcheck::ref

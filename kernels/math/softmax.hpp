// Per-column softmax quantities from a row's logits, and the logsumexp helpers.
//
// A row's statistics are m = max_v z_v and S = sum_v exp(t_v) with the shifted, temperature-
// scaled logit t_v = (z_v - m) / T (docs/semantics.md notation). Two ways to get them:
//   * two-pass: pass 1 computes m (exact, any order), pass 2 sums exp(shifted_logit(...)) in
//     the lane order of reduction_order.hpp; the CPU backend does this;
//   * online: OnlineLse carries (m, s) and rescales s when m grows, which lets a kernel read a
//     row once; merge() combines two partial states. Its rounding differs from the two-pass
//     sum, so a kernel that uses it documents so.
// Both sides of a divergence are computed by the same functions here, so identical logit rows
// give bitwise identical log-probabilities, and every difference lp - lq is exactly 0.
//
// Zero probability: a column has probability exactly 0 (lp == -inf) if and only if its logit
// is -inf. shifted_logit clamps a finite logit's t_v at -FLT_MAX, so an overflowing z - m (or
// a division by a small T) can never turn a positive probability into a structural zero.
#pragma once

#include "kernels/math/hd.hpp"

namespace divcheck::math {

// True when a logit makes its whole row NaN (docs/semantics.md, non-finite rule 1).
DIVCHECK_HD inline bool poisons_row(float z) { return is_nan(z) || z == kInf; }

// t_v = (z_v - m) / T for a row whose max m is finite; -inf only for z_v == -inf.
// T = 1 divides exactly, so the plain rows share this function with the temperature rows.
DIVCHECK_HD inline float shifted_logit(float z, float m, float temperature) {
  if (z == -kInf) return -kInf;
  float t = (z - m) / temperature;
  return t < -kFloatMax ? -kFloatMax : t;
}

// Log-softmax path: lp_v = t_v - log S (log_target = True, and every row without log_target).
DIVCHECK_HD inline float log_softmax_from_shifted(float t, float log_s) { return t - log_s; }

// Probability path (log_target = False): p_v = exp(t_v) / S by division, and the log taken of
// that probability. Where p_v is below the smallest normal float (log p would be inaccurate or
// -inf although p_v > 0) the log-softmax value is used instead; t_v = -inf gives p = 0, lp = -inf.
struct ProbAndLog {
  float p;
  float lp;
};
DIVCHECK_HD inline ProbAndLog prob_path_from_shifted(float t, float s, float log_s) {
  float p = f_softmax_exp(t) / s;
  float lp = p >= kFloatMinNormal ? f_log(p) : t - log_s;
  return {p, lp};
}

// The summand of the normaliser S for a logit z of a row with max m: exp(t_v), exactly as
// the fixed-point sum sees it. shifted_logit's clamp and -inf test are not needed here: every
// t_v below -104 (a clamped one, an overflowing z - m, a -inf logit) gives a term below 2^-150,
// and so does exp(-inf) = +0: all truncate to the same fixed-point 0 (exact_sum.hpp).
DIVCHECK_HD inline float softmax_term(float z, float m, float temperature) {
  return f_softmax_exp_ftz((z - m) / temperature);
}

// p_v and lp_v of one column from its logit and the row's m, S, log S: the probability path
// (log_target = False) or the log-softmax path (p = exp(lp)). Both backends call this.
DIVCHECK_HD inline ProbAndLog softmax_column(float z, float m, float s, float log_s, float temperature,
                                             bool prob_path) {
  const float t = shifted_logit(z, m, temperature);
  if (prob_path) return prob_path_from_shifted(t, s, log_s);
  const float lp = log_softmax_from_shifted(t, log_s);
  return {f_softmax_exp(lp), lp};
}

// Tame rows. A side is tame when every logit is finite and the smallest shifted logit
// t_min = (min_v z_v - m) / T is >= kTameShift (tame_side: evaluated exactly as shifted_logit
// evaluates each t_v, and rounding is monotone, so every t_v >= t_min). Then, bit for bit:
//   * shifted_logit(z, m, T) == (z - m) / T: no -inf logit, nothing to clamp;
//   * f_softmax_exp(x) == f_softmax_exp_ftz(x) for x = t_v, lp_v = t_v - log S and lp_v / 2:
//     S <= V < 2^31 gives log S < 21.5, so x >= -64 - 21.5 and x log2(e) >= -123.4 > -126: the
//     result is a normal float, which the flushing ex2 returns unchanged.
// The kernels evaluate tame rows with the *_tame forms below (fewer instructions, the same
// values); every other row takes the general forms. kernels/cuda tests check the equalities.
inline constexpr float kTameShift = -64.0f;

DIVCHECK_HD inline bool tame_side(float min_z, float m, float temperature) {
  return (min_z - m) / temperature >= kTameShift;  // false for a -inf or NaN minimum
}

// shifted_logit of a tame row.
DIVCHECK_HD inline float shifted_logit_tame(float z, float m, float temperature) { return (z - m) / temperature; }

// softmax_column of a tame row on the log-softmax path.
DIVCHECK_HD inline ProbAndLog softmax_column_tame(float z, float m, float log_s, float temperature) {
  const float lp = log_softmax_from_shifted(shifted_logit_tame(z, m, temperature), log_s);
  return {f_softmax_exp_ftz(lp), lp};
}

// Online logsumexp state: m = running max, s = sum of exp(z - m) so far.
struct OnlineLse {
  float m = -kInf;
  float s = 0.0f;
  DIVCHECK_HD void add(float t) {
    if (t == -kInf) return;
    if (t > m) {
      s = s * f_exp(m - t) + 1.0f;
      m = t;
    } else {
      s = s + f_exp(t - m);
    }
  }
  DIVCHECK_HD void merge(const OnlineLse& o) {
    if (o.m == -kInf) return;
    if (m == -kInf) { *this = o; return; }
    if (o.m > m) {
      s = s * f_exp(m - o.m) + o.s;
      m = o.m;
    } else {
      s = s + o.s * f_exp(o.m - m);
    }
  }
  DIVCHECK_HD float logsumexp() const { return m + f_log(s); }
};

}  // namespace divcheck::math

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

#include <stdint.h>

#include <type_traits>

#include "kernels/math/hd.hpp"

namespace divcheck::math {

// The temperature of a row as the formulas below take it: a float T (every shifted logit is the
// IEEE quotient (z - m) / T), or a PowerOfTwoTemperature, T = 2^k with 2^-k a normal float, which
// multiplies by 2^-k instead and gives the same bits: for every float d, d / 2^k and d 2^-k are
// the same real number, and IEEE division and multiplication both round that number once (to
// nearest even), so they return the same float, zeros, subnormals, overflow to infinity, infinities
// and NaN included. On the GPU the product is one instruction and the quotient about ten, with a
// slow path (FCHK and a call) for a zero dividend, which every thread meets once per row at its
// own maximum (bench/RESULTS.md steps 22, 23 and 38). tests/cpu/math_test.cpp and the GPU tests
// (tame_exp_check.cu) check the identity.
struct PowerOfTwoTemperature {
  float inverse;  // 2^-k, exactly 1 / T
};

// The one-pass sums of tame rows at T = 2^k with 2 <= T <= 2^62 (RowPaths::plain_pow2_t, the
// CUDA kernels' one_pass_chunk; bench/RESULTS.md step 73) fold 2^-k out of the columns: with
// d = z - m per side, exp(t) is taken as 2^(d (log2(e) 2^-k)) (f_exp2_ftz of one product instead
// of t = d 2^-k and then t log2(e)), and the factors linear in t (KL's t_y - t_x, cross-entropy's
// t_x) are formed from d and summed in units of T, the sum scaled by 2^-k with the 2^-64 the
// kernel applies anyway. The same bits wherever the old form had no subnormal intermediate:
// log2(e) 2^-k is exact (a normal float), so d (log2(e) 2^-k) and (d 2^-k) log2(e) are one
// rounding of the same real number whenever d 2^-k is exact; every factor, product and partial
// sum of the folded form is 2^k times the old one's (at most 2^68 a column and 2^99 a row for
// V < 2^31: no overflow), and the final 2^-(64+k) is a normal float for k <= 62. Where the old
// form had a subnormal intermediate (|d| < 2^(k-126) or a product below 2^-126) the folded one
// rounds less, and the one scaling at the end rounds as the old one's did. T < 2 and T > 2^62
// take the reciprocal's kernels, which at T = 2^k compute the division's bits (1/T is exact).
DIVCHECK_HD inline bool folds_into_one_pass_sums(const PowerOfTwoTemperature& t) {
  return t.inverse <= 0x1p-1f && t.inverse >= 0x1p-62f;
}
// log2(e) 2^-k: exact (kLog2e's significand, the exponent moved by -k >= -62).
DIVCHECK_HD inline float log2e_over(const PowerOfTwoTemperature& t) { return kLog2e * t.inverse; }

// Any other T != 1 as the CUDA kernels of the plain path take it (RowPaths::plain_recip_t,
// TempForm::reciprocal): the product by the reciprocal r = 1/T rounded once (IEEE, per thread),
// d r, instead of the quotient d / T. Not the same bits as the division: two roundings (r's and
// the product's) where the division has one, so the shifted logit errs by one unit of |t| more
// (docs/tolerances.md, "Logit rows: building blocks": e_v's 3|t| counts T's rounding, r's and
// the product's). What it keeps: monotone in d (a positive factor, rounding monotone:
// tame_side's argument below holds), exact zeros (0 r = 0; identical rows give
// identical products), -inf for -inf, and no slow path (a quotient of a zero dividend takes the
// division's on the GPU, once per thread and side at its own maximum: bench/RESULTS.md step 72).
// For T = 2^k, r = 2^-k exactly and the product is the quotient (PowerOfTwoTemperature).
struct ReciprocalTemperature {
  float inverse;  // 1/T rounded to nearest
};
DIVCHECK_HD inline ReciprocalTemperature reciprocal_temperature(float t) { return {1.0f / t}; }
// Where the form applies: 1/T rounded is a normal, finite float (about 2.9e-39 < T < 8.5e37; a
// subnormal reciprocal would lose bits, an infinite one make 0 * inf a NaN).
DIVCHECK_HD inline bool reciprocal_temperature_is_normal(float t) {
  const float r = reciprocal_temperature(t).inverse;
  return r >= kFloatMinNormal && r <= kFloatMax;
}

// The three forms (the formulas below are templates over them; C++17, as nvcc compiles the
// kernels, hence a static_assert and not a concept). Any other type, e.g. a double T, is a
// compile error.
template <class T>
inline constexpr bool kIsTemperature = std::is_same_v<T, float> || std::is_same_v<T, PowerOfTwoTemperature> ||
                                       std::is_same_v<T, ReciprocalTemperature>;

// The power-of-two form of a T that is known to be one (the CUDA kernels: the launcher checked it
// with power_of_two_temperature below): 2^-k from T's exponent bits alone, without a test (exact:
// 2^(127 - e) has the biased exponent 254 - e).
DIVCHECK_HD inline PowerOfTwoTemperature power_of_two_temperature_of(float t) {
  uint32_t bits;
  __builtin_memcpy(&bits, &t, sizeof bits);
  const uint32_t inv = (254u - (bits >> 23)) << 23;
  PowerOfTwoTemperature out;
  __builtin_memcpy(&out.inverse, &inv, sizeof inv);
  return out;
}

// Whether T = 2^k with 2^-k a normal float (|k| <= 126), and then its power-of-two form
// (power_of_two_temperature_of). False for any other T (out is not written).
DIVCHECK_HD inline bool power_of_two_temperature(float t, PowerOfTwoTemperature& out) {
  uint32_t bits;
  __builtin_memcpy(&bits, &t, sizeof bits);
  const uint32_t exponent = bits >> 23;  // the sign bit is 0 for T > 0; a negative T fails below
  if ((bits & 0x7fffffu) != 0 || exponent < 1 || exponent > 253) return false;
  out = power_of_two_temperature_of(t);
  return true;
}

// d / T in the form of the temperature (the same bits for a float T and a PowerOfTwoTemperature;
// for a ReciprocalTemperature d r, above).
template <class Temp>
DIVCHECK_HD inline float divide_by_temperature(float d, Temp temperature) {
  static_assert(kIsTemperature<Temp>, "a temperature is a float, a PowerOfTwoTemperature or a ReciprocalTemperature");
  if constexpr (std::is_same_v<Temp, float>) return d / temperature;
  else return d * temperature.inverse;
}

// True when a logit makes its whole row NaN (docs/semantics.md, non-finite rule 1).
DIVCHECK_HD inline bool poisons_row(float z) { return is_nan(z) || z == kInf; }

// t_v = (z_v - m) / T for a row whose max m is finite; -inf only for z_v == -inf.
// T = 1 divides exactly, so the plain rows share this function with the temperature rows.
template <class Temp>
DIVCHECK_HD inline float shifted_logit(float z, float m, Temp temperature) {
  if (z == -kInf) return -kInf;
  float t = divide_by_temperature(z - m, temperature);
  return t < -kFloatMax ? -kFloatMax : t;
}

// Log-softmax path: lp_v = t_v - log S (log_target = True, and every row without log_target).
DIVCHECK_HD inline float log_softmax_from_shifted(float t, float log_s) { return t - log_s; }

// Probability path (log_target = False): p_v = exp(t_v) / S as exp(t_v) times the row's 1/S
// (inv_s = 1/S rounded once per row and side: one multiply per column instead of a division),
// and the log taken of that probability (f_fast_log). Where p_v is below the smallest normal
// float (log p would be inaccurate or -inf although p_v > 0) the log-softmax value is used
// instead; t_v = -inf gives p = 0, lp = -inf. docs/tolerances.md ("The probability path") has
// the error argument of the reciprocal and of the device's log.
struct ProbAndLog {
  float p;
  float lp;
};
DIVCHECK_HD inline ProbAndLog prob_path_from_shifted(float t, float inv_s, float log_s) {
  float p = f_softmax_exp(t) * inv_s;
  float lp = p >= kFloatMinNormal ? f_fast_log(p) : t - log_s;
  return {p, lp};
}

// The summand of the normaliser S for a logit z of a row with max m: exp(t_v), exactly as
// the fixed-point sum sees it. shifted_logit's clamp and -inf test are not needed here: every
// t_v below -104 (a clamped one, an overflowing z - m, a -inf logit) gives a term below 2^-150,
// and so does exp(-inf) = +0: all truncate to the same fixed-point 0 (exact_sum.hpp).
template <class Temp>
DIVCHECK_HD inline float softmax_term(float z, float m, Temp temperature) {
  return f_softmax_exp_ftz(divide_by_temperature(z - m, temperature));
}

// p_v and lp_v of one column from its logit and the row's m, 1/S, log S: the probability path
// (log_target = False) or the log-softmax path (p = exp(lp); inv_s unused). Both backends call this.
template <class Temp>
DIVCHECK_HD inline ProbAndLog softmax_column(float z, float m, float inv_s, float log_s, Temp temperature,
                                             bool prob_path) {
  const float t = shifted_logit(z, m, temperature);
  if (prob_path) return prob_path_from_shifted(t, inv_s, log_s);
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
// values; softmax_column_tame_folded alone rounds differently); every other row takes the general
// forms. kernels/cuda tests check the equalities.
inline constexpr float kTameShift = -64.0f;

template <class Temp>
DIVCHECK_HD inline bool tame_side(float min_z, float m, Temp temperature) {
  return divide_by_temperature(min_z - m, temperature) >= kTameShift;  // false for a -inf or NaN minimum
}

// shifted_logit of a tame row.
template <class Temp>
DIVCHECK_HD inline float shifted_logit_tame(float z, float m, Temp temperature) {
  return divide_by_temperature(z - m, temperature);
}

// softmax_column of a tame row on the log-softmax path.
template <class Temp>
DIVCHECK_HD inline ProbAndLog softmax_column_tame(float z, float m, float log_s, Temp temperature) {
  const float lp = log_softmax_from_shifted(shifted_logit_tame(z, m, temperature), log_s);
  return {f_softmax_exp_ftz(lp), lp};
}

// softmax_column_tame with p from the shifted logit by one fma (hd.hpp tame_prob_from_shifted,
// c = tame_exp2_offset(log S) once per row, as kl.hpp tame_probs); lp = t - log S as above.
// The CUDA kernels take it for total variation (row_policies.cuh TameFold::probs), whose terms
// and gradients read p and q but not lp (the compiler drops lp): 2 operations per column fewer
// (log S subtracted, the product by log2(e)). Not softmax_column_tame's bits; the error is
// docs/tolerances.md's "Tame gradient forms" bound of p (2.23|lp| + 4 units, inside the scale's
// 24 + 16|lp|). Exact ties stay exact: t_y = t_x and S_y = S_x give c_y = c_x and p = q.
template <class Temp>
DIVCHECK_HD inline ProbAndLog softmax_column_tame_folded(float z, float m, float log_s, float c, Temp temperature) {
  const float t = shifted_logit_tame(z, m, temperature);
  return {tame_prob_from_shifted(t, c), log_softmax_from_shifted(t, log_s)};
}

// softmax_column_tame with sqrt(p) as well, both from the shifted logit by one fma: r = sqrt(p) =
// 2^fma(t, log2(e)/2, c/2) (hd.hpp tame_root_from_shifted, c = tame_exp2_offset(log S) once per row)
// and p = r * r; lp = t - log S as above. The CUDA kernels take it for squared Hellinger
// (row_policies.cuh TameFold::roots), whose terms read the roots and whose gradients the roots and
// p, but not lp (the compiler drops lp): its forward 2 operations and the non-flushing
// exponential's range handling per side fewer, its gradients one exponential per side fewer. Not
// the general form's bits (sqrt_prob(lp) and exp(lp)); the error is docs/tolerances.md's "Tame
// roots of squared Hellinger". Identical rows stay exact: t_y = t_x and S_y = S_x give equal roots.
struct ProbLogRoot {
  float p, lp, r;
};
template <class Temp>
DIVCHECK_HD inline ProbLogRoot softmax_column_tame_roots(float z, float m, float log_s, float c, Temp temperature) {
  const float t = shifted_logit_tame(z, m, temperature);
  const float r = tame_root_from_shifted(t, c);
  return {r * r, log_softmax_from_shifted(t, log_s), r};
}

// softmax_column of a tame row on the probability path: bit for bit prob_path_from_shifted, as
// no shifted logit needs the -inf test or the clamp, exp(t_v) >= e^-64 is a normal float (the
// flushing ex2 returns it unchanged), and p_v = exp(t_v) / S >= e^-64 / 2^31 > 2^-124 is never
// below FLT_MIN (S <= V < 2^31, and 1/S rounds to at least 2^-31), so the fallback never applies.
template <class Temp>
DIVCHECK_HD inline ProbAndLog prob_column_tame(float z, float m, float inv_s, Temp temperature) {
  const float p = f_softmax_exp_ftz(shifted_logit_tame(z, m, temperature)) * inv_s;
  return {p, f_fast_log(p)};
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

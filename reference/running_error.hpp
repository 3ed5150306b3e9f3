// First-order running error analysis in double (internal to the reference; no Boost).
//
// An `Err` carries a value v (the exact value, to double precision) and e, a bound on the
// absolute error, in units of u, that a float32 evaluation of the same formula accumulates.
// Every operation follows one principle (docs/tolerances.md): the error of a result is the sum
// over its operands of |d result / d operand| * (operand's error) plus |result| for the result's
// own rounding. Sums do not add a rounding per addition: the verdict multiplies the whole scale
// by (c + sigma(n)) where sigma(n) is the summation depth, so a sum only accumulates the errors
// of its terms (each of which already includes its own rounding, i.e. at least |term|).
//
// A value known to be exactly zero by structure (a zero probability, a masked term) is
// `Err{0, 0}` and annihilates products, so no 0 * inf appears in an error bound.
//
// e == 0 means more than "small": float32 holds exactly v (an input, a parameter float32
// represents, a structural 0 or 1). An operation whose operands are both exact and whose exact
// result is a float32 number is exact too (IEEE operations are correctly rounded, and such a
// result cannot underflow), so it keeps e == 0: 0 - 0, p - q of two equal inputs, 1 - 1, x * 1.
// A sum with a single non-structural term is that term (x + 0 = x). This is what lets the
// reference tell a structural zero (scale 0: the verdict demands an exact 0) from a value that
// is 0 only in exact arithmetic (scale > 0: float32 may return rounding noise there).
#pragma once

#include <algorithm>
#include <cmath>

namespace divcheck::ref {

// Absolute error of one float32 operation whose result is subnormal (half the subnormal spacing
// 2^-149), in units of u = 2^-24: every operation adds it, so underflow in a chain of
// operations is accounted for (it is ~1e-38 u, invisible for normal results).
inline constexpr double kTiny = 0x1p-126;

struct Err {
  double v = 0.0;  // value
  double e = 0.0;  // error bound, in units of u (absolute)
};

inline Err exact(double v) { return {v, 0.0}; }
// True when float32 represents v exactly (NaN and ±inf are not "exact" results).
inline bool is_f32_value(double v) { return std::isfinite(v) && static_cast<double>(static_cast<float>(v)) == v; }
// A quantity rounded once (a parameter converted to float32, a single operation's result).
inline Err rounded(double v) { return {v, std::fabs(v) + kTiny}; }
// A parameter or count as float32 arithmetic sees it: exact when float32 represents it, else
// rounded once.
inline Err param_err(double v) { return static_cast<double>(static_cast<float>(v)) == v ? exact(v) : rounded(v); }
inline bool structurally_zero(const Err& a) { return a.v == 0.0 && a.e == 0.0; }

inline Err operator-(const Err& a) { return {-a.v, a.e}; }
// Exactness of one operation on two exact operands: the double result v must itself be exact
// (checked with the error-free transformations TwoSum / FMA) and a float32 number.
inline bool exact_sum(double a, double b, double v) {
  const double bb = v - a;
  const double err = (a - (v - bb)) + (b - bb);  // TwoSum: a + b = v + err exactly
  return err == 0.0 && is_f32_value(v);
}
inline Err add(const Err& a, const Err& b) {
  double v = a.v + b.v;
  if (a.e == 0.0 && b.e == 0.0 && exact_sum(a.v, b.v, v)) return {v, 0.0};
  return {v, a.e + b.e + std::fabs(v) + kTiny};
}
inline Err sub(const Err& a, const Err& b) {
  double v = a.v - b.v;
  if (a.e == 0.0 && b.e == 0.0 && exact_sum(a.v, -b.v, v)) return {v, 0.0};
  return {v, a.e + b.e + std::fabs(v) + kTiny};
}
inline Err mul(const Err& a, const Err& b) {
  if (structurally_zero(a) || structurally_zero(b)) return {0.0, 0.0};
  double v = a.v * b.v;
  if (a.e == 0.0 && b.e == 0.0 && std::fma(a.v, b.v, -v) == 0.0 && is_f32_value(v)) return {v, 0.0};
  return {v, std::fabs(a.v) * b.e + std::fabs(b.v) * a.e + std::fabs(v) + kTiny};
}
// Product with the second-order term e_a * e_b * u2 added, where u2 = (c + sigma) * u is the
// scale-to-absolute factor of the verdict: needed where both factors may be pure rounding
// noise (dcor of degenerate samples), so that the bound on the product of two errors is kept.
inline Err mul2(const Err& a, const Err& b, double u2) {
  Err r = mul(a, b);
  r.e += a.e * b.e * u2;
  return r;
}
// Multiplication by a power of two (or by 0, -1, 1): exact, unless an exact operand's product
// leaves the float32 range of exact values (a subnormal halved), which then rounds once.
inline Err scaled_exact(const Err& a, double pow2) {
  const double v = a.v * pow2;
  if (a.e == 0.0 && !is_f32_value(v)) return rounded(v);
  return {v, a.e * std::fabs(pow2)};
}
inline Err div(const Err& a, const Err& b) {
  if (structurally_zero(a)) return {0.0, 0.0};
  double v = a.v / b.v;
  if (a.e == 0.0 && b.e == 0.0 && std::fma(v, b.v, -a.v) == 0.0 && is_f32_value(v)) return {v, 0.0};
  double ab = std::fabs(b.v);
  return {v, a.e / ab + std::fabs(v) * b.e / ab + std::fabs(v) + kTiny};
}
// A differentiable elementary function f evaluated at a: value f(a.v) and derivative f'(a.v).
// At a structural zero an odd function with f(0) = 0 (expm1, log1p, tanh, sqrt: IEEE and C
// Annex F require f(+-0) = +-0 exactly) gives a structural zero.
inline Err apply(double value, double derivative, const Err& a) {
  if (structurally_zero(a) && value == 0.0) return {0.0, 0.0};
  return {value, std::fabs(derivative) * a.e + std::fabs(value) + kTiny};
}
// Square root with a bound that stays valid near 0, where the first-order term e / (2 sqrt x)
// is not: |sqrt(x + d) - sqrt(x)| <= min(|d| / (2 sqrt x), sqrt |d|). `unit` is the factor the
// verdict turns scales into absolute errors with ((c + sigma) u), so that unit * result.e is
// sqrt(unit * x.e) in the second case.
inline Err sqrt_err(const Err& x, double unit) {
  const double v = std::sqrt(std::max(x.v, 0.0));
  if (x.e == 0.0 && x.v >= 0.0 && std::fma(v, v, -x.v) == 0.0 && is_f32_value(v)) return {v, 0.0};  // sqrt(0), sqrt(1)
  double prop = x.e == 0.0 ? 0.0 : std::sqrt(x.e * unit) / unit;
  if (v > 0.0) prop = std::min(prop, x.e / (2.0 * v));
  return {v, prop + v + kTiny};
}
inline Err absolute(const Err& a) { return {std::fabs(a.v), a.e}; }

// Accumulates a sum of terms; see the header comment for why no per-addition rounding is added.
// Structural zeros add nothing; a sum with at most one other term is exactly that term (adding
// exact zeros rounds nothing), so it keeps the term's own error, 0 for an exact term.
struct ErrSum {
  double v = 0.0;
  double e = 0.0;
  double e_terms = 0.0;  // sum of the terms' own errors (the bound while n_terms <= 1)
  int n_terms = 0;       // non-structural terms so far (counted up to 2)
  void add(const Err& t) {
    if (structurally_zero(t)) return;
    v += t.v;
    e += std::max(t.e, std::fabs(t.v));
    e_terms += t.e;
    if (n_terms < 2) ++n_terms;
  }
  Err get() const { return {v, n_terms <= 1 ? e_terms : e}; }
};

}  // namespace divcheck::ref

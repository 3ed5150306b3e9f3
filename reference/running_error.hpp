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
// A quantity rounded once (a parameter converted to float32, a single operation's result).
inline Err rounded(double v) { return {v, std::fabs(v) + kTiny}; }
// A parameter or count as float32 arithmetic sees it: exact when float32 represents it, else
// rounded once.
inline Err param_err(double v) { return static_cast<double>(static_cast<float>(v)) == v ? exact(v) : rounded(v); }
inline bool structurally_zero(const Err& a) { return a.v == 0.0 && a.e == 0.0; }

inline Err operator-(const Err& a) { return {-a.v, a.e}; }
inline Err add(const Err& a, const Err& b) {
  double v = a.v + b.v;
  return {v, a.e + b.e + std::fabs(v) + kTiny};
}
inline Err sub(const Err& a, const Err& b) {
  double v = a.v - b.v;
  return {v, a.e + b.e + std::fabs(v) + kTiny};
}
inline Err mul(const Err& a, const Err& b) {
  if (structurally_zero(a) || structurally_zero(b)) return {0.0, 0.0};
  double v = a.v * b.v;
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
// Multiplication by a power of two (exact).
inline Err scaled_exact(const Err& a, double pow2) { return {a.v * pow2, a.e * std::fabs(pow2)}; }
inline Err div(const Err& a, const Err& b) {
  if (structurally_zero(a)) return {0.0, 0.0};
  double v = a.v / b.v;
  double ab = std::fabs(b.v);
  return {v, a.e / ab + std::fabs(v) * b.e / ab + std::fabs(v) + kTiny};
}
// A differentiable elementary function f evaluated at a: value f(a.v) and derivative f'(a.v).
inline Err apply(double value, double derivative, const Err& a) {
  return {value, std::fabs(derivative) * a.e + std::fabs(value) + kTiny};
}
// Square root with a bound that stays valid near 0, where the first-order term e / (2 sqrt x)
// is not: |sqrt(x + d) - sqrt(x)| <= min(|d| / (2 sqrt x), sqrt |d|). `unit` is the factor the
// verdict turns scales into absolute errors with ((c + sigma) u), so that unit * result.e is
// sqrt(unit * x.e) in the second case.
inline Err sqrt_err(const Err& x, double unit) {
  const double v = std::sqrt(std::max(x.v, 0.0));
  double prop = x.e == 0.0 ? 0.0 : std::sqrt(x.e * unit) / unit;
  if (v > 0.0) prop = std::min(prop, x.e / (2.0 * v));
  return {v, prop + v + kTiny};
}
inline Err absolute(const Err& a) { return {std::fabs(a.v), a.e}; }

// Accumulates a sum of terms; see the header comment for why no per-addition rounding is added.
struct ErrSum {
  double v = 0.0;
  double e = 0.0;
  void add(const Err& t) {
    v += t.v;
    e += std::max(t.e, std::fabs(t.v));
  }
  Err get() const { return {v, e}; }
};

}  // namespace divcheck::ref

// Internal to the reference (includes Boost; only .cpp files include it): the two real types
// the reference is instantiated for, the few generic helpers the row implementations need,
// and the single final rounding, round-to-odd into double.
#pragma once

#include <boost/multiprecision/float128.hpp>
#include <boost/multiprecision/mpfr.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace divcheck::ref {

// 113-bit significand (libquadmath). The fast instance the gate uses.
using Float128 = boost::multiprecision::float128;
// 50 decimal digits (~169 bits) of MPFR, fixed precision stored inline: no heap per value and no
// dependence on MPFR's thread-local default precision, so two threads may compute at once.
using Mpfr50 = boost::multiprecision::number<
    boost::multiprecision::mpfr_float_backend<50, boost::multiprecision::allocate_stack>,
    boost::multiprecision::et_off>;

template <class R>
inline bool is_nan(const R& x) {
  return boost::multiprecision::isnan(x);
}
template <class R>
inline bool is_inf(const R& x) {
  return boost::multiprecision::isinf(x);
}
template <class R>
inline bool is_finite(const R& x) {
  return boost::multiprecision::isfinite(x);
}
template <class R>
inline R r_inf() {
  return std::numeric_limits<R>::infinity();
}
template <class R>
inline R r_nan() {
  return std::numeric_limits<R>::quiet_NaN();
}
// Nearest double (used for error analysis and logging, never for an output value).
template <class R>
inline double to_double(const R& x) {
  return static_cast<double>(x);
}

// float128 -> MPFR-50 exactly: the 113-bit significand split into three doubles (each step
// exact), summed in MPFR (169 bits hold all three). For comparing the two instances.
inline Mpfr50 widen_exact(const Float128& x) {
  if (is_nan(x) || is_inf(x)) return Mpfr50(static_cast<double>(x));
  const double hi = static_cast<double>(x);
  const double mid = static_cast<double>(x - Float128(hi));
  const double lo = static_cast<double>(x - Float128(hi) - Float128(mid));
  return Mpfr50(hi) + Mpfr50(mid) + Mpfr50(lo);
}

// The final rounding of every reference value. Round-to-odd into double: if the conversion is
// inexact and the nearest double has an even last significand bit, step one ulp toward the
// exact value. The result is then one of the two doubles around x, the one with an odd last
// bit, so a later round-to-nearest into float32/bf16/f16 (<= 24 bits <= 53 - 2) equals the
// correct single rounding of x (Boldo & Melquiond, "When double rounding is odd"). NaN and
// ±inf pass through; finite values beyond the double range become ±inf.
template <class R>
double round_to_odd(const R& x) {
  if (is_nan(x)) return std::numeric_limits<double>::quiet_NaN();
  double d = static_cast<double>(x);  // a neighbour of x (nearest)
  if (std::isinf(d)) return d;        // ±inf, or finite beyond the double range
  if (R(d) == x) return d;            // exact (includes ±0)
  std::uint64_t bits = std::bit_cast<std::uint64_t>(d);
  if ((bits & 1u) == 0) d = std::nextafter(d, R(d) < x ? std::numeric_limits<double>::infinity()
                                                       : -std::numeric_limits<double>::infinity());
  return d;
}

}  // namespace divcheck::ref

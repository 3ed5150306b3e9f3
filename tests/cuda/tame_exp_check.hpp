// Device check behind math::tame_side (kernels/math/softmax.hpp): for every float x in
// [kTameExpLowest, 0], the kernels' softmax exponential f_softmax_exp(x) and the flushing
// f_softmax_exp_ftz(x) return the same bits. Tame rows only evaluate exponentials of arguments
// in that range (t_v >= -64, lp_v >= -64 - 21.5, lp_v / 2), so the tame forms equal the
// general ones there.
#pragma once

#include <cstdint>

namespace divcheck::gputest {

inline constexpr float kTameExpLowest = -87.0f;  // below -64 - ln(2^31) = -85.49; above ln(FLT_MIN) = -87.34

struct TameExpCheck {
  std::uint64_t tested = 0;       // floats x checked
  std::uint64_t mismatches = 0;   // x with different bits
  std::uint64_t subnormal = 0;    // x whose exp is below FLT_MIN (must be 0 on this range)
  float first_mismatch = 0.0f;
};

// Runs on the current CUDA device (throws on a CUDA error).
TameExpCheck check_tame_exponentials();

// Device check behind math::PowerOfTwoTemperature: for every float d (all 2^32 bit patterns) and
// ten k in [-126, 126], the device's IEEE division d / 2^k and the product d 2^-k return the same
// bits (NaN: both NaN).
struct PowerOfTwoDivisionCheck {
  int ks = 0;                     // powers checked
  std::uint64_t tested = 0;       // (d, k) pairs
  std::uint64_t mismatches = 0;
  float first_mismatch = 0.0f;    // the smallest-bits d of a mismatch
};
PowerOfTwoDivisionCheck check_power_of_two_divisions();

// Device check behind math::f_fast_log (kernels/math/hd.hpp; the probability path's log and
// Jensen-Shannon's log(1 + exp(-a))): over every float x in [FLT_MIN, 2], the error of
// f_fast_log(x) against ln x (the device's double log, rounded once from an error far below the
// float unit u = 2^-24), in units of u: near_one: the largest |error| for x in [1/2, 2];
// relative: the largest |error| / |ln x| for x < 1/2. docs/tolerances.md bounds it by 3.48 and
// 5 |ln x| units.
struct FastLogCheck {
  std::uint64_t tested = 0;   // floats x checked
  double near_one = 0.0;      // max |error| / u on [1/2, 2]
  double relative = 0.0;      // max |error| / (u |ln x|) on [FLT_MIN, 1/2)
  bool one_is_zero = false;   // f_fast_log(1) == +0 exactly
  bool two_is_ln2 = false;    // f_fast_log(2) == math::kLn2 exactly
  std::uint64_t non_finite = 0;
};
FastLogCheck check_fast_logs();

}  // namespace divcheck::gputest

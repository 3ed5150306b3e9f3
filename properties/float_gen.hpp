// Floating-point value generators written for divcheck (rc::gen::arbitrary<float> never yields
// NaN, inf, subnormals or huge values). A ValueDist pairs a shrinkable element generator with
// the same distribution drawn from a seeded RNG; draw_values uses the first for tensors small
// enough to shrink element by element and the second for large ones (whose shapes still shrink).
// Every value is rounded once to the tensor's dtype when drawn, so copies stay bitwise equal.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <rapidcheck.h>

#include "core/dtype.hpp"
#include "properties/gen_primitives.hpp"

namespace divcheck::pgen {

struct ValueDist {
  rc::Gen<double> gen;                          // shrinkable; shrinks toward simple values
  std::function<double(SeededRng&)> seeded;     // the same distribution, no shrinking
};

// Logit-like values at `scale`: mostly uniform in [-3 scale, 3 scale] (22-bit resolution), some
// small multiples of scale/4 (ties), some of widely varying magnitude (down to 2^-30 scale).
// Shrinks toward 0 through multiples of scale/4.
ValueDist logit_dist(double scale);

// Uniform in [lo, hi] (22-bit resolution); shrinks toward lo.
ValueDist uniform_dist(double lo, double hi);

// Garbage for masked positions: NaN, +-inf, +-1e30, the dtype's extremes, denormals.
ValueDist garbage_dist();

// Number of elements up to which a tensor's values shrink element by element.
inline constexpr std::size_t kShrinkableValues = 2048;

// Inside rc::gen::exec: n values of `dist`, each rounded once to `dt` (f32, bf16 or f16).
std::vector<double> draw_values(std::size_t n, const ValueDist& dist, DType dt);

// A quiet NaN (the value used for NaN inputs).
double nan_value();

}  // namespace divcheck::pgen

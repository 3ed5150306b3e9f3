// The high-precision reference: every output and gradient of SPEC.md computed in >= 113-bit
// arithmetic from the exact input values and rounded once, with a condition scale per element.
// Implementation files are .cpp only (Boost.Multiprecision does not compile under nvcc).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace divcheck {

// One reference output tensor. All vectors have numel() entries (row-major).
struct ExpectedTensor {
  DType dtype = DType::f32;   // dtype of the implementation's output
  Shape shape;
  // The exact value rounded once to double with round-to-odd (so a later rounding to f32, bf16
  // or f16 is a correct single rounding). NaN and ±inf as in docs/semantics.md. Values beyond
  // the output dtype's range are kept as large doubles; the verdict treats them as ±inf.
  std::vector<double> value;
  // Condition scale (>= 0): the first-order error bound of a float32 evaluation of this
  // element's formula, in units of u, before the summation-depth and per-row constants
  // (docs/tolerances.md). 0 where the value is structurally exact.
  std::vector<double> scale;
  // Discontinuity allowance (absolute, >= 0): where the value depends on a sign or clamp that
  // float32 cannot resolve (a near-tie under sgn, dcor's clamp edge), the size of the jump.
  std::vector<double> jump;
  // 1 where the value is a structural zero: the implementation must then return exactly ±0.
  // Structural means value == 0 AND scale == 0 (and no allowance): the zero comes from the
  // structure of the inputs, not from arithmetic that happens to cancel. The zeros of scale 0
  // (reference/running_error.hpp: Err{0, 0} and exact float32 operations on exact operands):
  // masked / inert positions, columns with zero probability (-inf logit) on both sides, sgn(0)
  // ties of tvd_prob (p == q exactly), empty reductions (no valid position / row, dcor with
  // N < 4), a clearly active dcor clamp, an upstream gradient g = 0, point-mass rows (one finite
  // logit: V = 1), and every position whose two logit rows (or hidden rows, fused-linear) are
  // bitwise identical in a row with zero_on_identical. A value that is 0 in exact arithmetic but
  // whose float32 evaluation cancels (e.g. the TV gradient 1/2 p (s sgn - sum sgn p) of a
  // near-one-hot row, or rows that are exact shifts of each other) has scale > 0 and is judged
  // by the bound, not by this flag (docs/tolerances.md, "Exact zeros").
  std::vector<std::uint8_t> exact_zero;

  std::int64_t numel() const { return static_cast<std::int64_t>(value.size()); }
};

struct Expected {
  ExpectedTensor loss;
  std::map<std::string, ExpectedTensor> grads;  // one per wanted role, same names
};

enum class Precision : std::uint8_t {
  float128,  // Boost float128 (libquadmath, 113-bit significand): the fast default
  mpfr50,    // MPFR at 50 decimal digits (~166 bits): validates the float128 instance
};

// Computes the reference for a validated case (throws InvalidArgument via validate_case).
Expected compute_reference(const Case& c, Precision precision = Precision::float128);

}  // namespace divcheck

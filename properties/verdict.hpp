// The tolerance model and the verdict: does an implementation's Outputs agree with the
// reference's Expected? Bounds per docs/tolerances.md:
//
//   |y - r| <= (c + sigma) * u * scale(r) + jump(r) + u_out * |r| + floor_out
//
// u = 2^-24 (float32 arithmetic), c the registry row's constant (loss or gradient), sigma the
// summation depth of the case's sums, u_out the output dtype's unit roundoff when it is
// narrower than f32 (the final rounding), floor_out the output dtype's smallest subnormal
// (absolute error of a result that underflowed). Plus: exact zeros, NaN agreement, inf agreement.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "reference/reference.hpp"

namespace divcheck {

enum class MismatchKind : std::uint8_t { none, out_of_bound, not_exact_zero, nan_mismatch, inf_mismatch, missing, shape };

struct Mismatch {
  std::int64_t index;
  double got;
  double expected;
  double bound;
  MismatchKind kind;
};

struct TensorVerdict {
  std::string name;            // "loss" or the role name of a gradient
  std::int64_t total = 0;
  std::int64_t wrong = 0;
  double worst_ratio = 0.0;    // max |y - r| / bound over finite comparisons (0 when exact)
  std::int64_t worst_index = -1;
  std::vector<Mismatch> first; // up to 8 first mismatches, in index order
};

struct Verdict {
  bool pass = true;
  double worst_ratio = 0.0;    // over all tensors
  std::vector<TensorVerdict> tensors;
  std::string summary() const; // one line: "PASS worst 0.03 of bound" / "FAIL grad input_logits: 12/4096 wrong ..."
};

// Summation-depth term sigma(n) = ceil(n / 1024) + 16 (docs/semantics.md, summation order).
double summation_depth(std::int64_t n);

// The bound for one element (exposed for tests and reports).
struct BoundInputs {
  double c;          // registry constant
  double sigma;      // summation depth
  DType out_dtype;
};
double element_bound(const BoundInputs& b, double scale, double jump, double r);

Verdict judge(const Case& c, const Outputs& got, const Expected& expected);

}  // namespace divcheck

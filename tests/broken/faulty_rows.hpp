// The computations behind the broken backends: a plain double-precision implementation of
// masked_kl_divergence, temperature_scaled_masked_kl_divergence, total_variation and tvd_prob
// (correct when no fault is switched on), plus one switch per bug. Independent of
// kernels/math on purpose: a fixture should not share the code it is used to test.
#pragma once

#include "core/case.hpp"
#include "kernels/backend.hpp"

namespace divcheck::broken {

struct Faults {
  bool two_way_sign = false;           // sgn(p - q) as (p > q ? 1 : -1)
  bool no_max_subtraction = false;     // softmax = exp(z) / sum exp(z) with float32's exp range
  bool no_temperature_factor = false;  // temperature-row gradients without 1/T
  bool leak_masked = false;            // masked positions computed and summed
};

// masked_kl_divergence, temperature_scaled_masked_kl_divergence or total_variation.
Outputs faulty_logit_rows(const Case& c, const Faults& f);

// tvd_prob with the two-way gradient select (the loss is the CPU backend's).
Outputs two_way_tvd_prob(const Case& c, const Backend& cpu);

// The CPU backend's result, then what a missing n_b = 0 guard does: NaN loss (or NaN entries
// of a "none" vector) and NaN gradients for every position of each fully masked sequence.
Outputs unguarded_sequence_mean(const Case& c, const Backend& cpu);

// True for the rows whose default reduction is the per-sequence masked mean.
bool is_per_sequence_row(const Case& c);

}  // namespace divcheck::broken

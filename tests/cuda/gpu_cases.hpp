// Case builders of the GPU tests, on top of tests/cpu/test_cases.hpp: cases of every row of
// issue 3 at any (B, T, V) with masks, support masks and non-default parameters; identical
// inputs; garbage written into masked positions.
#pragma once

#include <cstdint>

#include "core/case.hpp"

namespace divcheck::gputest {

// A valid case of row `id` (a logit row, or tvd_prob with N = B*T rows) with random inputs:
// position 1 of sequence 0 masked (or row 1 ignored), a ~75% support mask on the support rows,
// temperature 0.7, a capped cross-entropy on odd seeds, both log_target paths, reduction
// "none" on every third seed; every gradient wanted, upstream gradient g.
Case varied_case(DivergenceId id, DType dt, std::int64_t B, std::int64_t T, std::int64_t V, std::uint64_t seed,
                 double g = 0.75);

// The same case with the q side (x, or tvd_prob's q) made bitwise equal to the p side.
Case with_identical_sides(Case c);

// Writes NaN, +inf, -inf and 1e30 (rounded to the dtype) into every masked position of every
// float input (logit rows: positions whose mask is 0; tvd_prob: rows whose label is ignored).
Case with_garbage_at_masked(Case c);

// Zero-filled masked positions (the counterpart of with_garbage_at_masked).
Case with_zeros_at_masked(Case c);

// How many rows the persistent grid's prefetch requests ahead (kPrefetchedRowsCounter) for
// a forward-only, staged run of logit case `c` on a grid of `clusters` clusters, whose input
// rows start 16-byte aligned: cluster k loops over the rows k, k + clusters, ...; every valid
// row whose next valid row in that loop has 16-byte aligned slices (and at least one whole
// chunk) is counted once. A poisoned row (a NaN logit) requests its next row like any other.
std::int64_t expected_prefetches(const Case& c, std::int64_t clusters);

// The kernel's plain path: no support mask, the log-softmax path (log_target where the row has it).
void make_plain(Case& c);

// The case without gradients (and without an upstream gradient): a forward-only launch.
Case forward_only(Case c);

// Every gradient element at a masked position is +0 (bit pattern 0); "" or the first offender.
std::string masked_gradients_are_plus_zero(const Case& c, const Outputs& o);

}  // namespace divcheck::gputest

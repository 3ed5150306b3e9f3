// Throughput of the reference itself: how many input elements (B*T*V) per second
// compute_reference() handles for one divergence, forward and every gradient. The gate's time
// budget depends on it (docs/tolerances.md, "Cost").
#pragma once

#include <cstdint>

#include "core/registry.hpp"
#include "reference/reference.hpp"

namespace divcheck {

struct ReferenceThroughput {
  std::int64_t elements = 0;        // rows * vocab per evaluation
  int repeats = 0;
  double seconds = 0.0;             // wall time of all repeats
  double cpu_seconds = 0.0;         // CPU time of the calling thread (stable on a busy machine)
  double elements_per_second = 0.0;      // per wall second
  double elements_per_cpu_second = 0.0;  // per CPU second
};

// Times compute_reference on a deterministic case of `rows` positions (B = 1, T = rows) by
// `vocab` columns with float32 logits, all positions valid, every gradient wanted. Supports the
// nine logit-level rows and tvd_prob; throws InvalidArgument for the others or for sizes < 1.
ReferenceThroughput measure_reference_throughput(DivergenceId id, std::int64_t rows, std::int64_t vocab,
                                                 Precision precision = Precision::float128, int repeats = 1);

}  // namespace divcheck

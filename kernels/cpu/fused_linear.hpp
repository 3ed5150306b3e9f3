// fused_linear_masked_kl_divergence on the CPU: the projection h W^T / T fused with the KL
// math, chunk_size valid tokens at a time, never the full (B, T, V) logits.
#pragma once

#include "core/case.hpp"

namespace divcheck::cpu {

Outputs run_fused_linear(const Case& c);

}  // namespace divcheck::cpu

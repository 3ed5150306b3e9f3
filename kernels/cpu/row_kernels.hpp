// One position of a logit-level divergence on the CPU, in the structure of a CUDA row kernel:
//   pass 1  side_stats:   max m and S = sum exp((z - m)/T) of each side (S by the exact,
//                         order-independent fixed-point sum of kernels/math/exact_sum.hpp);
//   columns side_columns: p_v and lp_v of each side, by the same code for both sides;
//   pass 2  the row kernel's statistics (lane-strided sums) and the per-position loss;
//   pass 3  the row kernel's gradients, each written once, already scaled by coef = w g / T.
// The pointwise formulas are kernels/math's; nothing here does its own math.
#pragma once

#include <cstdint>

namespace divcheck::cpu {

// Pass 1 of one side of a row.
struct SideStats {
  float m = 0.0f;        // max logit
  float s = 0.0f;        // sum of exp of the shifted logits
  float log_s = 0.0f;    // log s (>= 0: the max column contributes exp(0) = 1)
  float inv_s = 0.0f;    // 1 / s rounded once (the probability path multiplies by it)
  bool poisoned = false; // a NaN or +inf logit, or no finite logit: the row is NaN
};
SideStats side_stats(const float* z, std::int64_t n, float temperature);

// p_v, lp_v of one side: the log-softmax path, or the probability path (log_target = False).
void side_columns(const float* z, std::int64_t n, float temperature, const SideStats& st, bool prob_path, float* p,
                  float* lp);

// The columns of one position's two distributions.
struct RowView {
  std::int64_t n = 0;                    // V
  const float* p = nullptr;              // p side (target / clean / teacher)
  const float* lp = nullptr;
  const float* q = nullptr;              // q side (input / noisy / student)
  const float* lq = nullptr;
  const std::uint8_t* support = nullptr; // nullptr: every column is in the support
};

// Where the gradients go: nullptr for a side whose gradient is not wanted.
struct RowGrads {
  float* gp = nullptr;  // d(coef * ell) / d(p-side logits)
  float* gq = nullptr;  // d(coef * ell) / d(q-side logits)
  float coef = 0.0f;    // w_bt * g_b * (1/T)
};

struct RowOptions {
  bool capped = false;         // masked_cross_entropy with max_loss
  float max_loss = 0.0f;
  float scaling_factor = 1.0f;
};

// A row kernel returns the per-position loss ell and writes the wanted gradients. Where ell is
// +inf (KL, Jefferys, uncapped cross-entropy) the gradients are NaN (docs/semantics.md rule 3).
using RowKernel = float (*)(const RowView&, const RowGrads&, const RowOptions&);

float kl_row(const RowView& r, const RowGrads& g, const RowOptions& o);
float jefferys_row(const RowView& r, const RowGrads& g, const RowOptions& o);
float cross_entropy_row(const RowView& r, const RowGrads& g, const RowOptions& o);
float jensen_shannon_row(const RowView& r, const RowGrads& g, const RowOptions& o);
float hellinger_row(const RowView& r, const RowGrads& g, const RowOptions& o);
float total_variation_row(const RowView& r, const RowGrads& g, const RowOptions& o);

}  // namespace divcheck::cpu

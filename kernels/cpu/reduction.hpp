// Position weights and loss reduction over (b, t) for the logit rows and the fused-linear row
// (docs/semantics.md, "Reductions and the weight w"):
//   sequence mean: s_b = (sum_t valid ell_bt) / n_b (0 when n_b = 0); "mean" = (sum_b s_b) / B,
//                  "none" = the vector s; w_bt = 1/(B n_b) resp. 1/n_b;
//   token mean:    (sum valid ell) / N_valid (0 when nothing is valid); w_bt = 1/N_valid.
// Sums over positions (and over the s_b) are float32 sums in the lane order of
// kernels/math/reduction_order.hpp (cpu/lane_sum.hpp), as the CUDA backend's. The gradient coefficient
// coef_bt = w_bt * g_b / T is formed in double and rounded once to float.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace divcheck::cpu {

enum class ReductionKind : std::uint8_t { sequence_mean, sequence_none, token_mean };

// "mean" and "sequence_mean" -> sequence_mean, "none" -> sequence_none, "token_mean".
ReductionKind reduction_kind(const std::string& reduction);

class PositionReduction {
 public:
  // mask: optional (B, T) position mask; inv_temperature: 1/T of the row (1 without T).
  PositionReduction(const Case& c, ReductionKind kind, std::int64_t batch, std::int64_t seq, const Tensor* mask,
                    double inv_temperature);

  std::int64_t batch() const { return batch_; }
  std::int64_t seq() const { return seq_; }
  bool valid(std::int64_t b, std::int64_t t) const { return valid_[static_cast<std::size_t>(b * seq_ + t)] != 0; }
  // Gradient coefficient of a valid position (0 when no gradient is wanted).
  float coef(std::int64_t b, std::int64_t t) const;
  void set_loss(std::int64_t b, std::int64_t t, float ell) { ell_[static_cast<std::size_t>(b * seq_ + t)] = ell; }
  // The reduced loss: a float32 scalar, or (B,) for sequence_none.
  Tensor loss() const;

 private:
  ReductionKind kind_;
  std::int64_t batch_, seq_;
  std::vector<std::uint8_t> valid_;
  std::vector<std::int64_t> count_;  // n_b
  std::int64_t total_ = 0;           // N_valid
  std::vector<double> g_;            // g_b (one entry, or B entries for sequence_none); empty: no gradient
  double inv_temperature_;
  std::vector<float> ell_;
};

}  // namespace divcheck::cpu

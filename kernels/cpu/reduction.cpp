// Position weights and loss reduction (see reduction.hpp).
#include "kernels/cpu/reduction.hpp"

#include "core/errors.hpp"
#include "kernels/cpu/lane_sum.hpp"
#include "kernels/cpu/tensor_rows.hpp"

namespace divcheck::cpu {

ReductionKind reduction_kind(const std::string& reduction) {
  if (reduction == "mean" || reduction == "sequence_mean") return ReductionKind::sequence_mean;
  if (reduction == "none") return ReductionKind::sequence_none;
  if (reduction == "token_mean") return ReductionKind::token_mean;
  throw InvalidArgument("reduction", "\"" + reduction + "\"", "not a position reduction of the cpu backend");
}

PositionReduction::PositionReduction(const Case& c, ReductionKind kind, std::int64_t batch, std::int64_t seq,
                                     const Tensor* mask, double inv_temperature)
    : kind_(kind), batch_(batch), seq_(seq), valid_(mask_flags(mask, batch * seq)),
      count_(static_cast<std::size_t>(batch), 0), inv_temperature_(inv_temperature),
      ell_(static_cast<std::size_t>(batch * seq), 0.0f) {
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t t = 0; t < seq; ++t)
      if (valid(b, t)) ++count_[static_cast<std::size_t>(b)];
  for (auto n : count_) total_ += n;
  if (!c.wants_grad.empty()) {
    const Tensor& go = c.grad_output;
    for (std::int64_t i = 0; i < go.numel(); ++i) g_.push_back(go.get(i));
  }
}

float PositionReduction::coef(std::int64_t b, std::int64_t t) const {
  (void)t;
  if (g_.empty()) return 0.0f;
  double w = 0.0;
  const auto n_b = static_cast<double>(count_[static_cast<std::size_t>(b)]);
  switch (kind_) {
    case ReductionKind::sequence_mean: w = 1.0 / (static_cast<double>(batch_) * n_b) * g_[0]; break;
    case ReductionKind::sequence_none: w = 1.0 / n_b * g_[static_cast<std::size_t>(b)]; break;
    case ReductionKind::token_mean: w = 1.0 / static_cast<double>(total_) * g_[0]; break;
  }
  return static_cast<float>(w * inv_temperature_);
}

// Every float sum here is in the lane order of kernels/math/reduction_order.hpp (lane_sum, masked
// positions +0, which changes no bit: a lane starts at +0 and never holds -0), as the CUDA
// backend's reductions (kernels/cuda/position_device.cuh): depth ceil(n/1024) + 10 <= sigma(n).
Tensor PositionReduction::loss() const {
  auto at = [&](std::int64_t i) { return valid_[static_cast<std::size_t>(i)] ? ell_[static_cast<std::size_t>(i)] : 0.0f; };
  if (kind_ == ReductionKind::token_mean) {
    const float sum = lane_sum(batch_ * seq_, at);
    return Tensor::scalar_f32(total_ == 0 ? 0.0f : sum / static_cast<float>(total_));
  }
  std::vector<float> s(static_cast<std::size_t>(batch_), 0.0f);
  for (std::int64_t b = 0; b < batch_; ++b) {
    const std::int64_t n_b = count_[static_cast<std::size_t>(b)];
    if (n_b == 0) continue;  // a fully masked sequence contributes exactly 0
    const float sum = lane_sum(seq_, [&](std::int64_t t) { return at(b * seq_ + t); });
    s[static_cast<std::size_t>(b)] = sum / static_cast<float>(n_b);
  }
  if (kind_ == ReductionKind::sequence_none) {
    Tensor out(DType::f32, {batch_});
    for (std::int64_t b = 0; b < batch_; ++b) out.set(b, s[static_cast<std::size_t>(b)]);
    return out;
  }
  const float total = lane_sum(batch_, [&](std::int64_t b) { return s[static_cast<std::size_t>(b)]; });
  return Tensor::scalar_f32(total / static_cast<float>(batch_));
}

}  // namespace divcheck::cpu

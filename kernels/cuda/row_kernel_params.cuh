// The parameters of the logit row kernels (logit_rows_kernel.cuh) and of the streamed row kernels
// (stream_rows_kernel.cuh, stream_grad_rows_kernel.cuh): one struct passed by value, built on the
// host from a launch's arguments and plan by make_row_params (also by the kernel emulator, tests/cuda).
#pragma once

#include <cstdint>

#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/element_io.cuh"
#include "kernels/cuda/row_policies.cuh"

namespace divcheck::cuda {

struct RowKernelParams {
  const void* y;           // p-side logits (B*T, V)
  const void* x;           // q-side logits
  const uint8_t* valid;    // (B*T) or nullptr
  const uint8_t* support;  // (B*T, V) or nullptr
  int64_t rows, vocab, seq;
  int64_t slice;  // W: columns per CTA
  float temperature;
  bool prob_path;
  bool staged;
  bool prefetch;  // forward-only persistent launch: prefetch each next row (process_row)
  bool allow_tame;
  unsigned long long* counters;  // LogitArgs::counters (diagnostics) or nullptr
  RowOptions opt;
  // A partly staged kernel's K (logit_rows_body<..., kPartial>): the chunks of each slice in
  // shared memory. In the 4 bytes of padding after opt: a field that moved every later one
  // changed the code of the whole staged kernels (bench/RESULTS.md step 60).
  int staged_chunks;
  const float* coef;  // per sequence b; nullptr when no gradient is wanted
  void* gp;           // d/dy or nullptr
  void* gq;           // d/dx or nullptr
  float* row_loss;    // (B*T) per-position loss (LogitWorkspace::row_loss; its messages follow)
};

// The kernel parameters of a launch (host side; shared with the kernel emulator).
inline RowKernelParams make_row_params(const LogitArgs& a, const LogitPlan& plan, float* row_loss, const float* coef) {
  RowKernelParams prm{};
  prm.y = a.p_logits;
  prm.x = a.q_logits;
  prm.valid = a.valid;
  prm.support = a.support;
  prm.rows = a.batch * a.seq;
  prm.vocab = a.vocab;
  prm.seq = a.seq;
  prm.slice = plan.slice;
  prm.temperature = static_cast<float>(a.temperature);
  prm.prob_path = a.prob_path;
  prm.staged = plan.staged;
  prm.staged_chunks = plan.staged ? static_cast<int>(plan.staged_columns / kChunk) : 0;
  prm.prefetch = plan.persistent && plan.staged && a.grad_p == nullptr && a.grad_q == nullptr;
  prm.allow_tame = a.allow_tame;
  prm.counters = a.counters;
  prm.opt.has_support = a.support != nullptr;
  prm.opt.capped = a.capped;
  prm.opt.max_loss = static_cast<float>(a.max_loss);
  prm.opt.scaling_factor = static_cast<float>(a.scaling_factor);
  prm.coef = coef;
  prm.gp = a.grad_p;
  prm.gq = a.grad_q;
  prm.row_loss = row_loss;
  return prm;
}

}  // namespace divcheck::cuda

// One benchmark of the CUDA backend: a registry row at a (rows, V) shape and dtype, forward
// only, forward + backward (every gradient), or forward + the student's gradient only (the
// q side: input/noisy/student logits; the distillation case), timed by CUDA events around the launch with the
// L2 cache flushed (a 256 MB device memset, > 2x the H200's L2) before every timed iteration.
// In the same run, a device-to-device cudaMemcpyAsync that moves the same total number of
// bytes (bytes/2 read + bytes/2 written), also after a flush, is the bandwidth yardstick.
// Counters: bytes (the minimal traffic: every input read once, every gradient written once,
// plus the 1-byte position mask; the loss and the O(rows) workspace are not counted), GB/s,
// copy_GB/s, frac_of_copy, and the plan (ctas per row, staged).
#pragma once

#include <cstdint>
#include <string>

#include <benchmark/benchmark.h>

#include "core/registry.hpp"
#include "kernels/cuda/device_types.hpp"

namespace divcheck::bench {

struct BenchSpec {
  DivergenceId id = DivergenceId::masked_kl_divergence;
  std::int64_t rows = 0;   // B*T (tvd_prob: N)
  std::int64_t vocab = 0;  // V
  cuda::FloatKind dtype = cuda::FloatKind::bf16;
  bool backward = false;   // also every gradient
  bool student_only = false;  // with backward: only the q side's gradient (logit rows)
  bool smoke = false;      // tiny shape: run twice, check the result is finite and reproducible
};

// "<row>/<dtype>/<rows>x<V>/<fwd|fwd_bwd|fwd_bwd_student>"
std::string bench_name(const BenchSpec& s);

// The benchmark body (registered by bench_main.cpp). Errors are reported with
// State::SkipWithError and counted (failures()).
void run_benchmark(benchmark::State& state, const BenchSpec& spec);

int failures();

// Frees the cached device buffers (at exit, before the CUDA runtime shuts down).
void release_device_buffers();

}  // namespace divcheck::bench

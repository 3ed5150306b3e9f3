// The streamed plans of KL and cross-entropy, forward only (stream_rows_kernel.cuh) and with
// gradients (stream_grad_rows_kernel.cuh): when a launch takes one and its tiles. Plain C++17,
// shared by the launcher (logit_launch.cu) and the kernel emulator (tests/cuda/emulation), so both
// choose alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/plan_math.hpp"

namespace divcheck::cuda {

// Chunks of 8 columns per thread: 32 registers of row data for every dtype (16-bit: 4 chunks of
// 16 bytes per side; float: 2 chunks of 32 bytes per side).
constexpr int stream_chunks(std::size_t elem_size) { return elem_size == 4 ? 2 : 4; }
// The most tiles per row: one lane of the combining warp each (combine_one_pass_rows).
inline constexpr int kMaxStreamTiles = 32;
// Threads per CTA when not forced (LogitArgs::row_threads): groups of 8192 columns for every
// dtype (256 x 4 x 8, 512 x 2 x 8), 32 KB (16-bit) or 64 KB (float) of input per group.
constexpr int stream_threads(std::size_t elem_size) { return elem_size == 4 ? 512 : 256; }
// Groups per tile when not forced (LogitArgs::stream_groups): a thread sums 4 groups of its
// chunks per tile, so the warp and CTA stages of the tile's message (about 40% of the
// instructions with one group per tile: bench/RESULTS.md step 55) weigh a quarter as much.
inline constexpr int kStreamGroups = 4;
// Groups per tile with gradients (stream_grad_rows_kernel.cuh): phase B reads a tile again from
// L2 one step after phase A read it from HBM; in that step every resident CTA reads one tile and
// writes one tile of gradients (streaming stores: evicted first). 16-bit: G = 2, 396 CTAs (three
// 256-thread CTAs per SM) x 64 KB = 25 MB read, as much written; float: G = 1, 264 CTAs (two
// 512-thread CTAs per SM) x 64 KB = 17 MB read, as much written; against the 50 MB L2 (G = 2 in
// float would read 34 MB). A smaller G repeats the per-tile stages (the CTA's message, phase B's
// combine) more often per column. Measured (bench/RESULTS.md step 56): the second reads mostly
// missed L2 at G = 2 in 16-bit anyway; G = 1 was 0.91-0.93x of it, and G = 2 in float 1.04-1.10x
// of G = 1 (not made the default: the kernel is not the automatic plan).
constexpr int stream_grad_groups(std::size_t elem_size) { return elem_size == 4 ? 1 : 2; }

// The tolerance model's summation depth at V, sigma(V) = ceil(V / 1024) + 16 (docs/tolerances.md;
// reference/real_engine.hpp summation_depth_of, which tests/cuda/emulation/plan_math_test.cpp
// checks every streamed plan against).
constexpr std::int64_t stream_sigma(std::int64_t vocab) { return (vocab + 1023) / 1024 + 16; }

constexpr int stream_ceil_log2(std::int64_t x) {
  int d = 0;
  while ((std::int64_t{1} << d) < x) ++d;
  return d;
}

// The rounding depth of a streamed row sum (stream_rows_kernel.cuh) with tiles of g groups of
// `group` columns: a chunk's 8 terms pairwise (3), a group's chunks in order, 3 per merge of the
// thread's partials (the rescale's two levels and the addition; the columns short of a whole
// group are one more partial), then the warp, CTA and tile stages (each 2 + the log2 of the parts
// holding columns).
constexpr std::int64_t stream_depth(std::int64_t vocab, int threads, std::int64_t group, std::int64_t g) {
  const std::int64_t tile = group * g;
  const std::int64_t w = vocab < tile ? vocab : tile;
  const std::int64_t parts = (w + group - 1) / group;
  const std::int64_t chunks = ((group < w ? group : w) + kChunkColumns - 1) / kChunkColumns;
  const std::int64_t holding = threads < chunks ? threads : chunks;
  const std::int64_t tiles = (vocab + tile - 1) / tile;
  auto stage = [](std::int64_t n) { return n > 1 ? 2 + stream_ceil_log2(n) : 0; };
  return 3 + (chunks + threads - 1) / threads + 3 * (parts - 1) + stage(holding < 32 ? holding : 32) +
         stage((holding + 31) / 32) + stage(tiles);
}

// The register cap of the streamed kernel (LogitArgs::stream_registers; 0: automatic): 64 for
// float rows (two 512-thread CTAs per SM, no spills), 80 for 16-bit rows (three 256-thread CTAs
// per SM; at 64 their group loop spilled ~33 words per group and ran 0.86-1.00x of the deferred
// cluster kernel, at 80 1.11-1.19x: bench/RESULTS.md step 55).
inline int stream_registers_of(const LogitArgs& a) {
  if (a.stream_registers != 0) return a.stream_registers;
  return a.dtype == FloatKind::f32 ? 64 : 80;
}

// The streamed plan of a launch, or a plan with streamed = false where the launch does not take
// it. It takes it where the launch is a one-pass row's one exchange (one_pass_row_launch) or the
// centred forward of the Jefferys rows and squared Hellinger (centred_forward_launch), and its
// cluster size is not forced: forward only (deferred) automatically, with gradients only where
// stream_rows 2 forces it (measured slower than the cluster kernel: bench/RESULTS.md step 56);
// automatically (stream_rows 0) only where nothing else of the cluster kernel's plan is forced
// either (row_grid 0, allow_staging true: a forced row grid or the unstaged fallback ask for the
// cluster kernel, as the tests that compare its plans do). LogitArgs::stream_rows 1: never; 2:
// always, an InvalidArgument naming stream_rows where it cannot. The tile: G groups of N x R x 8
// columns, G = stream_groups (or kStreamGroups, with gradients stream_grad_groups), raised where a
// row would need more than kMaxStreamTiles tiles; the automatic G is lowered where the merges would take the depth of a
// row sum past sigma(V) (short rows; a forced G there is an InvalidArgument naming
// stream_groups). plan.ctas: tiles per row; plan.slice: columns per tile.
inline LogitPlan stream_plan(const LogitArgs& a) {
  LogitPlan p;
  if (a.stream_rows == 1 || (a.stream_rows == 0 && (a.row_grid != 0 || !a.allow_staging))) return p;
  if (!(one_pass_row_launch(a) || centred_forward_launch(a)) || a.cluster_ctas != 0) {
    if (a.stream_rows == 2)
      throw InvalidArgument("stream_rows", "2",
                            "the streamed kernels run only KL and cross-entropy on the log-softmax path "
                            "without a support mask at T = 1 (KL also at T = 2^k), and the Jefferys rows' "
                            "forward there at T = 1 or 2^k or on the probability path at T = 1, and squared "
                            "Hellinger's forward there at T = 1, without a forced cluster size");
    return p;
  }
  const bool grads = a.grad_p != nullptr || a.grad_q != nullptr;
  // With gradients only where forced: the streamed kernel with gradients ran 0.72-0.93x of the
  // cluster kernel's speed (bench/RESULTS.md step 56), so the automatic plan keeps the cluster.
  if (grads && a.stream_rows != 2) return p;
  const std::size_t elem = float_kind_size(a.dtype);
  const int threads = a.row_threads != 0 ? a.row_threads : stream_threads(elem);
  const std::int64_t group = static_cast<std::int64_t>(threads) * stream_chunks(elem) * kChunkColumns;
  const std::int64_t groups = (a.vocab + group - 1) / group;
  const std::int64_t fewest = (groups + kMaxStreamTiles - 1) / kMaxStreamTiles;  // for kMaxStreamTiles tiles
  const int automatic = grads ? stream_grad_groups(elem) : kStreamGroups;
  std::int64_t g = std::max<std::int64_t>(a.stream_groups != 0 ? a.stream_groups : automatic, fewest);
  while (g > fewest && g > 1 && stream_depth(a.vocab, threads, group, g) > stream_sigma(a.vocab)) {
    if (a.stream_groups != 0)
      throw InvalidArgument("stream_groups", std::to_string(a.stream_groups),
                            "takes the depth of a row sum past the tolerance model's sigma(V) at vocab " +
                                std::to_string(a.vocab) + " (fewer groups per tile)");
    --g;
  }
  p.streamed = true;
  p.registers = stream_registers_of(a);
  p.ctas = static_cast<int>((groups + g - 1) / g);
  p.threads = threads;
  p.slice = group * g;
  return p;
}

// Whether a grid of `grid` resident CTAs makes progress in the streamed kernel with gradients at
// `tiles` tiles per row (stream_grad_rows_kernel.cuh, stream_grad_rows_body: every wait is on
// earlier items when 2 grid > tiles - 1).
constexpr bool stream_grad_grid_ok(std::int64_t grid, std::int64_t tiles) { return grid >= 1 && 2 * grid > tiles - 1; }

// The messages' stride per row and the combine's tree width: the power of two >= tiles.
inline unsigned stream_stride(int tiles) {
  unsigned s = 1;
  while (s < static_cast<unsigned>(tiles)) s *= 2;
  return s;
}

}  // namespace divcheck::cuda

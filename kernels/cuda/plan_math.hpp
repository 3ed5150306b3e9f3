// The arithmetic of a logit-kernel plan (plain C++, shared by the launcher and the kernel
// emulator of tests/cuda/emulation): columns per CTA for C CTAs per row (a multiple of the
// 8-column chunk, so every slice of an aligned row starts 16-byte aligned), and the shared
// memory of a CTA: when staged, both rows' slices in their dtype and the support bytes (each part
// rounded up to 16 bytes, so a slice is always whole chunks), then the reduction records (32
// bytes per thread).
#pragma once

#include <cstddef>
#include <cstdint>

namespace divcheck::cuda {

// Threads per CTA of the row kernel: a plan's choice, 256 or 512, or 128 when forced (a benchmark
// knob; the kernel reads blockDim.x).
// The planner prefers 256-thread CTAs, three per SM (more columns per thread, so the per-row
// costs weigh less, and three CTAs at different phases of their rows), when their slices fit a
// third of an SM's shared memory; else two 256-thread CTAs per SM, then one of 512
// (bench/RESULTS.md). The register cap kRowRegisters allows three 256-thread CTAs per SM.
inline constexpr int kRowThreadsMax = 512;
// The register cap of the row kernel: 3 x 256 x 80 = 61440 of an SM's 65536 registers.
inline constexpr int kRowRegisters = 80;
// An upper bound of the row kernel's static shared memory (its mailboxes and row statistics;
// logit_rows_kernel.cuh asserts it), which the plan arithmetic of the tests assumes.
inline constexpr std::size_t kRowStaticSharedMax = 1536;
inline constexpr int kChunkColumns = 8;
// One thread's record for the CTA reductions (row_reduce.cuh), in dynamic shared memory.
inline constexpr int kRecordFloats = 8;
// The largest thread block cluster of a plan (16 is non-portable; plans use 1, 2, 4, 8 or 16).
inline constexpr int kMaxClusterCtas = 16;

inline std::size_t record_bytes(int threads) { return static_cast<std::size_t>(threads) * kRecordFloats * 4; }

inline std::int64_t slice_for(std::int64_t vocab, int ctas) {
  const std::int64_t per = (vocab + ctas - 1) / ctas;
  return (per + kChunkColumns - 1) / kChunkColumns * kChunkColumns;
}

// The staged bytes of a CTA: both rows' first `kept` columns of the slice (all of it, or a partly
// staged plan's first K chunks: partial_stage_columns) and the whole slice's support bytes.
inline std::size_t staged_bytes(std::int64_t slice, std::size_t elem, bool support, std::int64_t kept) {
  auto r16 = [](std::size_t n) { return (n + 15) / 16 * 16; };
  return 2 * r16(static_cast<std::size_t>(kept) * elem) + (support ? r16(static_cast<std::size_t>(slice)) : 0);
}
inline std::size_t staged_bytes(std::int64_t slice, std::size_t elem, bool support) {
  return staged_bytes(slice, elem, support, slice);
}

// The dynamic shared memory of a CTA: (staged) the slices, then the reduction records.
inline std::size_t dynamic_bytes(int threads, bool staged, std::int64_t slice, std::size_t elem, bool support,
                                 std::int64_t kept) {
  return record_bytes(threads) + (staged ? staged_bytes(slice, elem, support, kept) : 0);
}
inline std::size_t dynamic_bytes(int threads, bool staged, std::int64_t slice, std::size_t elem, bool support) {
  return dynamic_bytes(threads, staged, slice, elem, support, slice);
}

// A partly staged plan keeps the first K chunks of each slice in shared memory and reads the rest
// from global memory (the L2) in every pass; K is a multiple of this many chunks, so that the
// staged test of a thread's chunk (t + j N, N a multiple of 32) is the same across a warp.
inline constexpr std::int64_t kPartialStageChunks = 32;
// The most columns of a slice (a multiple of kPartialStageChunks chunks, below the whole slice)
// whose staged bytes fit `limit` with the records of `threads`; 0 if none.
inline std::int64_t partial_stage_columns(std::size_t limit, int threads, std::int64_t slice, std::size_t elem,
                                          bool support) {
  constexpr std::int64_t step = kPartialStageChunks * kChunkColumns;
  std::int64_t kept = (slice - 1) / step * step;
  while (kept > 0 && dynamic_bytes(threads, true, slice, elem, support, kept) > limit) kept -= step;
  return kept;
}

}  // namespace divcheck::cuda

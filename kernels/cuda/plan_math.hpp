// The arithmetic of a logit-kernel plan (plain C++, shared by the launcher and the kernel
// emulator of tests/cuda/emulation): columns per CTA for C CTAs per row (a multiple of the
// 8-column chunk, so every slice of an aligned row starts 16-byte aligned), and the shared
// memory a staged slice needs (both rows in their dtype, plus the support bytes; each part
// rounded up to 16 bytes, so a slice is always whole chunks).
#pragma once

#include <cstddef>
#include <cstdint>

namespace divcheck::cuda {

// Threads per CTA of the row kernel, and how many CTAs per SM the plan aims for (their slices
// share the SM's shared memory; one CTA's loads overlap another's arithmetic). A build-time
// choice (CMake DIVCHECK_ROW_THREADS: 512 or 256) so that both can be measured.
#ifndef DIVCHECK_ROW_THREADS
#define DIVCHECK_ROW_THREADS 512
#endif
inline constexpr int kRowThreads = DIVCHECK_ROW_THREADS;
static_assert(kRowThreads == 512 || kRowThreads == 256, "DIVCHECK_ROW_THREADS: 512 or 256");
inline constexpr int kRowCtasPerSm = kRowThreads == 512 ? 2 : 3;
inline constexpr int kChunkColumns = 8;

inline std::int64_t slice_for(std::int64_t vocab, int ctas) {
  const std::int64_t per = (vocab + ctas - 1) / ctas;
  return (per + kChunkColumns - 1) / kChunkColumns * kChunkColumns;
}

inline std::size_t staged_bytes(std::int64_t slice, std::size_t elem, bool support) {
  auto r16 = [](std::size_t n) { return (n + 15) / 16 * 16; };
  const auto w = static_cast<std::size_t>(slice);
  return 2 * r16(w * elem) + (support ? r16(w) : 0);
}

}  // namespace divcheck::cuda

// The arithmetic of a logit-kernel plan (plain C++, shared by the launcher and the kernel
// emulator of tests/cuda/emulation): columns per CTA for C CTAs per row (a multiple of 1024, so
// thread l is lane l of every slice), and the shared memory a staged slice needs (both rows in
// their dtype, plus the support bytes; each part rounded up to 16 bytes).
#pragma once

#include <cstddef>
#include <cstdint>

namespace divcheck::cuda {

inline constexpr int kRowThreads = 1024;

inline std::int64_t slice_for(std::int64_t vocab, int ctas) {
  const std::int64_t per = static_cast<std::int64_t>(ctas) * kRowThreads;
  return (vocab + per - 1) / per * kRowThreads;
}

inline std::size_t staged_bytes(std::int64_t slice, std::size_t elem, bool support) {
  auto r16 = [](std::size_t n) { return (n + 15) / 16 * 16; };
  const auto w = static_cast<std::size_t>(slice);
  return 2 * r16(w * elem) + (support ? r16(w) : 0);
}

}  // namespace divcheck::cuda

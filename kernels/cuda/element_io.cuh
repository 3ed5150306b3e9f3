// Element access of the CUDA kernels: the three input element types (float, __nv_bfloat16,
// __half), their exact widening to float, the one rounding back (round to nearest, ties to
// even; cuda_bf16.h / cuda_fp16.h intrinsics: subnormals kept, overflow to +-inf), and the
// 16-byte chunk (uint4) view used for vectorised global loads and stores.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <type_traits>

namespace divcheck::cuda {

template <class Elem>
struct ElemIo;

template <>
struct ElemIo<float> {
  static __device__ __forceinline__ float to_float(float e) { return e; }
  static __device__ __forceinline__ float from_float(float v) { return v; }
  static __device__ __forceinline__ float from_bits(uint32_t b) { return __uint_as_float(b); }
  static __device__ __forceinline__ uint32_t bits_of(float v) { return __float_as_uint(v); }
};
template <>
struct ElemIo<__nv_bfloat16> {
  static __device__ __forceinline__ float to_float(__nv_bfloat16 e) { return __bfloat162float(e); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ float from_bits(uint32_t b) {
    return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(b)));
  }
  static __device__ __forceinline__ uint32_t bits_of(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};
template <>
struct ElemIo<__half> {
  static __device__ __forceinline__ float to_float(__half e) { return __half2float(e); }
  static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ float from_bits(uint32_t b) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
  }
  static __device__ __forceinline__ uint32_t bits_of(float v) { return __half_as_ushort(__float2half_rn(v)); }
};

template <class Elem>
__device__ __forceinline__ float load_float(const Elem* p) {
  return ElemIo<Elem>::to_float(*p);
}
template <class Elem>
__device__ __forceinline__ void store_float(Elem* p, float v) {
  *p = ElemIo<Elem>::from_float(v);
}

// A 16-byte chunk holds kVec elements; element k of a chunk read from address a is the element
// at a + k (little-endian words, the low half of a word first).
template <class Elem>
inline constexpr int kVec = 16 / static_cast<int>(sizeof(Elem));

template <class Elem>
__device__ __forceinline__ float chunk_get(const uint4& c, int k) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(&c);
  if constexpr (sizeof(Elem) == 4) {
    return ElemIo<Elem>::from_bits(w[k]);
  } else if constexpr (std::is_same_v<Elem, __nv_bfloat16>) {
    // A bf16 widens by becoming the high half of a float (the bits __bfloat162float gives): the
    // word shifted left for the low element, the word with its low half cleared for the high
    // one (one instruction each; shift right and left were two).
    const uint32_t v = w[k >> 1];
    return __uint_as_float((k & 1) ? (v & 0xffff0000u) : (v << 16));
  } else {
    return ElemIo<Elem>::from_bits((w[k >> 1] >> (16 * (k & 1))) & 0xffffu);
  }
}

// Rounds v once to Elem and puts it at position k of the chunk.
template <class Elem>
__device__ __forceinline__ void chunk_set(uint4& c, int k, float v) {
  uint32_t* w = reinterpret_cast<uint32_t*>(&c);
  const uint32_t b = ElemIo<Elem>::bits_of(v);
  if constexpr (sizeof(Elem) == 4) {
    w[k] = b;
  } else {
    const int shift = 16 * (k & 1);
    w[k >> 1] = (w[k >> 1] & ~(0xffffu << shift)) | (b << shift);
  }
}

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
// Whether a launch's gradient slices (either may be nullptr: not wanted) take 16-byte stores.
__device__ __forceinline__ bool gradients_aligned16(const void* gp, const void* gq) {
  return (gp == nullptr || aligned16(gp)) && (gq == nullptr || aligned16(gq));
}

// The kernels' unit of work: a chunk of kChunk = 8 consecutive columns of a row, 16 bytes of a
// 16-bit dtype or 32 bytes of float, held as raw element bits (RawChunk::w). A whole chunk of an
// aligned row moves with 16-byte loads and stores; a partial or unaligned one element by element
// (its missing columns are zero bits, which every pass ignores by the chunk's count).
inline constexpr int kChunk = 8;

template <class Elem>
struct RawChunk {
  static constexpr int kWords = kChunk * static_cast<int>(sizeof(Elem)) / 16;  // uint4 words: 1 or 2
  uint4 w[kWords];
};

// Element k of a chunk as a float (exact widening).
template <class Elem>
__device__ __forceinline__ float raw_get(const RawChunk<Elem>& r, int k) {
  return chunk_get<Elem>(r.w[k / kVec<Elem>], k % kVec<Elem>);
}
// Rounds v once to Elem and puts it at column k.
template <class Elem>
__device__ __forceinline__ void raw_set(RawChunk<Elem>& r, int k, float v) {
  chunk_set<Elem>(r.w[k / kVec<Elem>], k % kVec<Elem>, v);
}

// Rounds a and b once each to Elem into columns 2j and 2j + 1 of a chunk (the values raw_set would
// give). On the device the 16-bit dtypes round both in one instruction (cvt.rn.bf16x2.f32,
// cvt.rn.f16x2.f32: the same round to nearest even as the single conversions); the compiler did
// not always find that pairing in two raw_set calls (bench/RESULTS.md step 65).
template <class Elem>
__device__ __forceinline__ void raw_set_pair(RawChunk<Elem>& r, int j, float a, float b) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(Elem) == 2) {
    uint32_t* w = reinterpret_cast<uint32_t*>(r.w);
    if constexpr (std::is_same_v<Elem, __nv_bfloat16>) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);  // .x (the low half) = a
      w[j] = *reinterpret_cast<const uint32_t*>(&h);
    } else {
      const __half2 h = __floats2half2_rn(a, b);
      w[j] = *reinterpret_cast<const uint32_t*>(&h);
    }
  } else
#endif
  {
    raw_set<Elem>(r, 2 * j, a);
    raw_set<Elem>(r, 2 * j + 1, b);
  }
}

// Loads the chunk at src with `cnt` (1..8) valid columns. kGlobal: read-only global memory
// (the non-coherent path); else shared memory. vec: whole and 16-byte aligned.
template <class Elem, bool kGlobal>
__device__ __forceinline__ void load_raw(const Elem* src, int cnt, bool vec, RawChunk<Elem>& r) {
  if (vec) {
    const uint4* s = reinterpret_cast<const uint4*>(src);
#pragma unroll
    for (int i = 0; i < RawChunk<Elem>::kWords; ++i) r.w[i] = kGlobal ? __ldg(s + i) : s[i];
    return;
  }
  // Compile-time indices only (unrolled), so the chunk stays in registers.
#pragma unroll
  for (int i = 0; i < RawChunk<Elem>::kWords; ++i) r.w[i] = uint4{0u, 0u, 0u, 0u};
#pragma unroll
  for (int k = 0; k < kChunk; ++k)
    if (k < cnt) raw_set<Elem>(r, k, load_float(src + k));  // exact: the value is an Elem
}

// The 32-bit shared-window address of p (a pointer into this CTA's shared memory); 0 on the host
// (the kernel emulator reads through the pointer: load_staged).
__device__ __forceinline__ uint32_t shared_address(const void* p) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#else
  (void)p;
  return 0u;
#endif
}

// Loads the whole chunk i of a staged slice: s (generic) and sa (shared_address(s)) name the
// same slice. The device reads through the 32-bit address (ld.shared; one add per chunk), so that
// the compiler never rebuilds the generic address of a shared buffer inside a loop (it did so
// under the register cap: ~18 instructions per chunk, bench/RESULTS.md step 43); the host
// emulator reads through s.
template <class Elem>
__device__ __forceinline__ void load_staged(const Elem* s, uint32_t sa, int i, RawChunk<Elem>& r) {
#if defined(__CUDA_ARCH__)
  (void)s;
  const uint32_t a = sa + static_cast<uint32_t>(i) * static_cast<uint32_t>(kChunk * sizeof(Elem));
#pragma unroll
  for (int w = 0; w < RawChunk<Elem>::kWords; ++w)
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.w[w].x), "=r"(r.w[w].y), "=r"(r.w[w].z), "=r"(r.w[w].w)
                 : "r"(a + 16u * static_cast<uint32_t>(w)));
#else
  (void)sa;
  load_raw<Elem, false>(s + i * kChunk, kChunk, true, r);
#endif
}

// Stores the first `cnt` columns of the chunk at dst (streaming 16-byte stores when vec).
template <class Elem>
__device__ __forceinline__ void store_raw(Elem* dst, int cnt, bool vec, const RawChunk<Elem>& r) {
  if (vec) {
    uint4* d = reinterpret_cast<uint4*>(dst);
#pragma unroll
    for (int i = 0; i < RawChunk<Elem>::kWords; ++i) __stcs(d + i, r.w[i]);
    return;
  }
#pragma unroll
  for (int k = 0; k < kChunk; ++k)
    if (k < cnt) store_float(dst + k, raw_get<Elem>(r, k));
}

}  // namespace divcheck::cuda

// divcheck_staged_ceiling: the bandwidth ceiling of the cluster kernel's data flow, with the
// arithmetic taken out. The logit kernel with gradients (kernels/cuda/logit_rows_kernel.cuh, one
// cluster of C CTAs per row) stages each CTA's slice of both sides in shared memory by one bulk
// copy, reads it in a few passes, waits for the cluster's exchange, and writes both gradients from
// shared memory. This program runs that skeleton at the benchmark shapes and plans with nothing
// computed: the same grid, cluster, CTA size, shared memory per CTA (so the same CTAs per SM), the
// same bulk copy and mbarrier, cluster barriers where the exchanges are, and 16-byte streaming
// stores of the slices' bytes as the "gradients". What it reaches is what the design could reach
// if the arithmetic were free: the question bench/RESULTS.md ("Reading the misses") asks of the
// forward+backward rows' 0.69-0.77 of the copy. Measured on the H200 (2026-12-04, step 64): 0.93-0.96
// of the copy at the automatic plans (three CTAs per SM), 0.87-0.93 for the same grid's plain
// per-thread copy; with +12 FMA per column 0.83-0.88, +16 0.72-0.79; the same counts with two
// of them ex2.approx 5-15% lower (one MUFU.EX2 weighs about 2.4 FMAs here); forward only with
// three passes and two barriers (the two-pass rows) +4/+8/+12 FMA 0.82/0.61/0.49 (bf16).
//
// Variants, one line each (the output is a Markdown table):
//   fwd+bwd copy        load, write both sides (no pass, no barrier)
//   fwd+bwd 1p+X        load, one reading pass, a cluster barrier (the one exchange), write
//   fwd+bwd 2p+X        load, two reading passes, a cluster barrier, write (scan + sums)
//   fwd+bwd 3p+2X       load, three passes with a barrier after the 2nd and 3rd, write (the two-pass rows)
//   fwd 2p+X            load, two passes, a cluster barrier, no write (forward only, one cluster per row)
//   fwd+bwd direct      no staging: each thread's 16-byte chunks loaded from global and stored
//                       (the plain streaming copy with the same grid; no cluster)
//   ... 4 pieces        the slices requested in 4 pieces, one mbarrier each; the first pass takes
//                       each piece as it arrives (what a pipelined first pass could gain at best)
//   ... +K FMA          K dependent FMAs per column in every pass, the write pass included (8
//                       independent chains per chunk and side): arithmetic of a known weight, to
//                       map the fraction against instructions per column in this design
//   ... +K FMA +2 EX2   the same instruction count with two of each chain's steps MUFU ex2.approx
//                       (the column loops' exponential): what the MUFU costs beyond its count
//   ... bulk store      the "gradients" written back into the slices (LDS + STS per chunk), then
//                       stored by the bulk copy engine (cp.async.bulk shared -> global, one
//                       thread, waiting for the engine's reads before the CTA exits) instead of
//                       16-byte stores by every thread
// A reading pass XORs each 16-byte chunk of both sides into a per-thread word (one LDS.128 per
// chunk and side and four LOP3: less than any real pass), and the word decides nothing but a
// store the data never trigger, so the compiler keeps the pass. Every run's gradients are checked
// to equal the inputs' bytes (a mismatch count, which must be 0). Timing as divcheck_bench: CUDA
// events around one launch after a 256 MiB L2 flush, the mean of 20, and a device-to-device copy
// of half the minimal bytes in the same run as the yardstick.
//   usage: divcheck_staged_ceiling [--smoke]      (--smoke: tiny shapes, the check only)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/bulk_copy.cuh"

namespace {

using divcheck::cuda::bulk_arm;
using divcheck::cuda::bulk_barrier_init;
using divcheck::cuda::bulk_copy;
using divcheck::cuda::bulk_wait;
using divcheck::cuda::BulkBarrier;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "divcheck_staged_ceiling: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct Params {
  const uint4* p;
  const uint4* q;
  uint4* gp;  // nullptr: forward only
  uint4* gq;
  long long row_chunks;    // 16-byte chunks per row and side
  int slice_chunks;        // per CTA and side
  int passes;              // reading passes over the staged slices
  int barrier_after;       // cluster barriers after passes >= this one (1-based); 0: none
  int pieces;              // bulk copies (and mbarriers) per slice: 1 or kMaxPieces
  bool bulk_store;         // gradients by cp.async.bulk shared -> global
  unsigned poison;         // a value no XOR of the data reaches in practice (the keep-alive store)
  unsigned* sink;
};

__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}

__device__ __forceinline__ uint4 load_shared(const uint4* s) { return *s; }

// A 16-byte shared store the compiler keeps even where it writes back what was just read.
__device__ __forceinline__ void store_shared(uint4* d, uint4 v) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(d));
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

constexpr int kMaxPieces = 4;

__device__ __forceinline__ void bulk_store(void* dst, const void* src, unsigned bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(src));
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(s), "r"(bytes) : "memory");
}

// kFma FMAs on each of the chunk pair's eight words read as floats (for bf16, two columns a word:
// kFma / 2 per column and side, kFma per column), folded into acc.
// kEx2 of them (after the FMAs) are the MUFU's ex2.approx instead, the exponential of the real
// column loops (the instruction count stays kFma per word).
__device__ __forceinline__ float mufu_ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <int kFma, int kEx2 = 0>
__device__ __forceinline__ void arithmetic(const uint4& a, const uint4& b, unsigned& acc) {
  static_assert(kEx2 <= kFma, "the exponentials replace some of the FMAs");
  if constexpr (kFma > 0) {
    float f[8] = {__uint_as_float(a.x), __uint_as_float(a.y), __uint_as_float(a.z), __uint_as_float(a.w),
                  __uint_as_float(b.x), __uint_as_float(b.y), __uint_as_float(b.z), __uint_as_float(b.w)};
#pragma unroll
    for (int r = 0; r < kFma - kEx2; ++r)
#pragma unroll
      for (int j = 0; j < 8; ++j) f[j] = fmaf(f[j], 0.999f, 0.5f);
#pragma unroll
    for (int r = 0; r < kEx2; ++r)
#pragma unroll
      for (int j = 0; j < 8; ++j) f[j] = mufu_ex2(f[j]);
    acc ^= __float_as_uint(((f[0] + f[1]) + (f[2] + f[3])) + ((f[4] + f[5]) + (f[6] + f[7])));
  }
}

// One cluster of gridDim.x / rows CTAs per row; CTA r of a cluster stages chunks
// [r * slice, (r + 1) * slice) of both sides.
template <int kFma, int kEx2>
__global__ void staged_kernel(const Params prm) {
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned ctarank, nctas;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(ctarank));
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(nctas));
  const long long row = blockIdx.x / nctas;
  const long long first = static_cast<long long>(ctarank) * prm.slice_chunks;
  const int n = static_cast<int>(max(0LL, min(static_cast<long long>(prm.slice_chunks), prm.row_chunks - first)));
  uint4* sp = reinterpret_cast<uint4*>(smem);
  uint4* sq = sp + prm.slice_chunks;
  BulkBarrier* bar = reinterpret_cast<BulkBarrier*>(sq + prm.slice_chunks);  // kMaxPieces of them
  if (threadIdx.x == 0)
    for (int k = 0; k < prm.pieces; ++k) bulk_barrier_init(bar[k]);
  __syncthreads();
  const long long base = row * prm.row_chunks + first;
  // piece k: chunks [k * per, min(n, (k + 1) * per)), per a multiple of the CTA size, so that
  // every thread's chunks of a pass fall in the pieces in order
  const int per = (n + prm.pieces * blockDim.x - 1) / (prm.pieces * blockDim.x) * blockDim.x;
  if (threadIdx.x == 0)
    for (int k = 0; k < prm.pieces; ++k) {
      const int lo = min(n, k * per), m = min(n, lo + per) - lo;
      if (m == 0) continue;
      bulk_arm(bar[k], static_cast<unsigned>(2 * m * 16));
      bulk_copy(sp + lo, prm.p + base + lo, static_cast<unsigned>(m * 16), bar[k]);
      bulk_copy(sq + lo, prm.q + base + lo, static_cast<unsigned>(m * 16), bar[k]);
    }
  // Before the first reader (a pass, or the write), each piece is waited for as it is reached.
  int arrived = 0;  // pieces waited for
  const auto reach = [&](int i) {
    while (arrived < prm.pieces && i >= arrived * per) {
      if (min(n, arrived * per) < n) bulk_wait(bar[arrived], 0);
      ++arrived;
    }
  };
  unsigned acc = 0;
  for (int pass = 1; pass <= prm.passes; ++pass) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      reach(i - static_cast<int>(threadIdx.x));
      const uint4 a = load_shared(sp + i), b = load_shared(sq + i);
      acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ static_cast<unsigned>(pass);
      arithmetic<kFma, kEx2>(a, b, acc);
    }
    reach(n);
    if (prm.barrier_after > 0 && pass >= prm.barrier_after) cluster_barrier();
  }
  reach(n);
  if (prm.gp == nullptr) {
    if (acc == prm.poison) prm.sink[threadIdx.x] = acc;  // keeps the passes; the data never get here
    return;
  }
  if (!prm.bulk_store) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const uint4 a = load_shared(sp + i), b = load_shared(sq + i);
      arithmetic<kFma, kEx2>(a, b, acc);
      __stcs(prm.gp + base + i, a);
      __stcs(prm.gq + base + i, b);
    }
    if (acc == prm.poison) prm.sink[threadIdx.x] = acc;
    return;
  }
  if (acc == prm.poison) prm.sink[threadIdx.x] = acc;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {  // the gradients' values into the slices
    const uint4 a = load_shared(sp + i), b = load_shared(sq + i);
    store_shared(sp + i, a);
    store_shared(sq + i, b);
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0 && n > 0) {
    bulk_store(prm.gp + base, sp, static_cast<unsigned>(n * 16));
    bulk_store(prm.gq + base, sq, static_cast<unsigned>(n * 16));
    asm volatile("cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}

// The same grid without staging or cluster: each thread's chunks straight from global memory.
__global__ void direct_kernel(const Params prm, int ctas_per_row) {
  const long long row = blockIdx.x / ctas_per_row;
  const long long first = static_cast<long long>(blockIdx.x % ctas_per_row) * prm.slice_chunks;
  const int n = static_cast<int>(max(0LL, min(static_cast<long long>(prm.slice_chunks), prm.row_chunks - first)));
  const long long base = row * prm.row_chunks + first;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const uint4 a = __ldcs(prm.p + base + i), b = __ldcs(prm.q + base + i);
    __stcs(prm.gp + base + i, a);
    __stcs(prm.gq + base + i, b);
  }
}

__global__ void count_mismatches(const uint4* a, const uint4* b, long long n, unsigned long long* bad) {
  unsigned long long local = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    local += (x.x != y.x) | (x.y != y.y) | (x.z != y.z) | (x.w != y.w);
  }
  if (local) atomicAdd(bad, local);
}

__global__ void fill_random(uint4* d, long long n, unsigned seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed ^ static_cast<unsigned>(i >> 32) * 40503u;
    uint4 v;
    v.x = h = h * 1664525u + 1013904223u;
    v.y = h = h * 1664525u + 1013904223u;
    v.z = h = h * 1664525u + 1013904223u;
    v.w = h * 1664525u + 1013904223u;
    d[i] = v;
  }
}

struct Shape {
  const char* name;
  long long rows, vocab;
  int elem;   // bytes per element
  int ctas;   // CTAs per row (the automatic plan's cluster, or the one under study)
  int threads;
  int pad_kb = 0;  // unused shared memory per CTA, to hold fewer CTAs per SM
};

struct Variant {
  const char* name;
  bool write, direct;
  int passes, barrier_after;
  int pieces = 1;
  bool bulk_store = false;
  int fma = 0;  // FMAs per column and pass: 0, 4, 8, 12 or 16
  int ex2 = 0;  // of which MUFU exponentials: 0 or 2 (with fma 8, 12, 16)
};

struct Buffers {
  uint4 *in = nullptr, *out = nullptr, *flush = nullptr;
  unsigned* sink = nullptr;
  unsigned long long* bad = nullptr;
  size_t flush_bytes = size_t{256} << 20;
};

double mean(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / static_cast<double>(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  const bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  if (argc > 1 && !smoke) {
    std::fprintf(stderr, "usage: divcheck_staged_ceiling [--smoke]\n  unknown argument: %s\n", argv[1]);
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("[  SKIPPED ] no CUDA device\n");
    return 0;
  }
  std::vector<Shape> shapes = {
      {"8192x128256 bf16", 8192, 128256, 2, 8, 256},   // KL bf16 fwd+bwd: 64 KB per CTA, 3 per SM
      {"4096x256000 bf16", 4096, 256000, 2, 16, 256},  // 64 KB, 3 per SM
      {"8192x128256 f32", 8192, 128256, 4, 16, 256},   // the whole staged f32 plan before step 62
      {"8192x128256 bf16", 8192, 128256, 2, 8, 256, 40},  // as the first, two CTAs per SM
      {"8192x128256 f32", 8192, 128256, 4, 8, 256},    // 128 KB per CTA: one per SM
  };
  if (smoke) shapes = {{"64x4104 bf16", 64, 4104, 2, 4, 256}, {"64x4104 f32", 64, 4104, 4, 2, 256}};
  const std::vector<Variant> variants = {
      {"fwd+bwd copy", true, false, 0, 0},   {"fwd+bwd 1p+X", true, false, 1, 1},
      {"fwd+bwd 2p+X", true, false, 2, 2},   {"fwd+bwd 3p+2X", true, false, 3, 2},
      {"fwd 2p+X", false, false, 2, 2},      {"fwd load only", false, false, 0, 0},
      {"fwd+bwd direct", true, true, 0, 0},
      {"fwd+bwd 2p+X 4 pieces", true, false, 2, 2, kMaxPieces},
      {"fwd+bwd copy bulk store", true, false, 0, 0, 1, true},
      {"fwd+bwd 2p+X bulk store", true, false, 2, 2, 1, true},
      {"fwd+bwd 2p+X +4 FMA", true, false, 2, 2, 1, false, 4},
      {"fwd+bwd 2p+X +8 FMA", true, false, 2, 2, 1, false, 8},
      {"fwd+bwd 2p+X +12 FMA", true, false, 2, 2, 1, false, 12},
      {"fwd+bwd 2p+X +16 FMA", true, false, 2, 2, 1, false, 16},
      {"fwd+bwd 2p+X +6 FMA +2 EX2", true, false, 2, 2, 1, false, 8, 2},
      {"fwd+bwd 2p+X +10 FMA +2 EX2", true, false, 2, 2, 1, false, 12, 2},
      {"fwd+bwd 2p+X +14 FMA +2 EX2", true, false, 2, 2, 1, false, 16, 2},
      {"fwd 3p+2X +4 FMA", false, false, 3, 2, 1, false, 4},   // the two-pass rows' forward
      {"fwd 3p+2X +8 FMA", false, false, 3, 2, 1, false, 8},
      {"fwd 3p+2X +12 FMA", false, false, 3, 2, 1, false, 12},
      {"fwd 3p+2X +6 FMA +2 EX2", false, false, 3, 2, 1, false, 8, 2},
  };
  const int iters = smoke ? 2 : 20;
  Buffers b;
  size_t max_side = 0;
  for (const Shape& s : shapes) max_side = std::max(max_side, static_cast<size_t>(s.rows * s.vocab * s.elem));
  check(cudaMalloc(&b.in, 2 * max_side + (size_t{1} << 20)), "cudaMalloc(inputs)");  // + the copy's mask bytes
  check(cudaMalloc(&b.out, 2 * max_side + (size_t{1} << 20)), "cudaMalloc(outputs)");  // + the copy's mask bytes
  check(cudaMalloc(&b.flush, b.flush_bytes), "cudaMalloc(flush)");
  check(cudaMalloc(&b.sink, 4096), "cudaMalloc(sink)");
  check(cudaMalloc(&b.bad, sizeof(unsigned long long)), "cudaMalloc(bad)");
  const auto kernel_of = [](int fma, int ex2) {
    switch (fma * 10 + ex2) {
      case 40: return staged_kernel<4, 0>;
      case 80: return staged_kernel<8, 0>;
      case 120: return staged_kernel<12, 0>;
      case 160: return staged_kernel<16, 0>;
      case 82: return staged_kernel<8, 2>;
      case 122: return staged_kernel<12, 2>;
      case 162: return staged_kernel<16, 2>;
      case 0: return staged_kernel<0, 0>;
      default:  // a variant without its instantiation would be measured under another's label
        std::fprintf(stderr, "divcheck_staged_ceiling: no kernel for fma = %d, ex2 = %d\n", fma, ex2);
        std::exit(2);
    }
  };
  const int kinds[][2] = {{0, 0}, {4, 0}, {8, 0}, {12, 0}, {16, 0}, {8, 2}, {12, 2}, {16, 2}};
  for (const auto& k : kinds)
    check(cudaFuncSetAttribute(kernel_of(k[0], k[1]), cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
          "cudaFuncSetAttribute(NonPortableClusterSizeAllowed)");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  int failures = 0;
  std::printf("| shape | plan | variant | CTAs per SM | ms | GB/s | copy GB/s | frac of copy | mismatches |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : shapes) {
    const long long row_chunks = s.vocab * s.elem / 16;
    const long long side_chunks = s.rows * row_chunks;
    const size_t side = static_cast<size_t>(side_chunks) * 16;
    fill_random<<<1024, 256>>>(b.in, 2 * side_chunks, 12345u);
    check(cudaGetLastError(), "fill_random");
    const int slice = static_cast<int>((row_chunks + s.ctas - 1) / s.ctas);
    const size_t smem = 2 * static_cast<size_t>(slice) * 16 + 8 * kMaxPieces + static_cast<size_t>(s.pad_kb) * 1024;
    for (const auto& k : kinds)
      check(cudaFuncSetAttribute(kernel_of(k[0], k[1]), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(smem)),
            "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
    int per_sm = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, staged_kernel<0, 0>, s.threads, smem), "occupancy");
    for (const Variant& v : variants) {
      Params prm{b.in, b.in + side_chunks, v.write ? b.out : nullptr, v.write ? b.out + side_chunks : nullptr,
                 row_chunks, slice, v.passes, v.barrier_after, v.pieces, v.bulk_store, 0x9e3779b9u, b.sink};
      const auto launch = [&] {
        if (v.direct) {
          direct_kernel<<<static_cast<unsigned>(s.rows * s.ctas), s.threads>>>(prm, s.ctas);
          return;
        }
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(static_cast<unsigned>(s.rows * s.ctas));
        cfg.blockDim = dim3(static_cast<unsigned>(s.threads));
        cfg.dynamicSmemBytes = smem;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = static_cast<unsigned>(s.ctas);
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        check(cudaLaunchKernelEx(&cfg, kernel_of(v.fma, v.ex2), prm), "cudaLaunchKernelEx(staged_kernel)");
      };
      check(cudaMemset(b.out, 0, 2 * side), "cudaMemset(outputs)");
      launch();
      check(cudaGetLastError(), "launch");
      check(cudaDeviceSynchronize(), "first launch");
      unsigned long long bad = 0;
      if (v.write) {
        check(cudaMemset(b.bad, 0, sizeof bad), "cudaMemset(bad)");
        count_mismatches<<<1024, 256>>>(b.in, b.out, 2 * side_chunks, b.bad);
        check(cudaMemcpy(&bad, b.bad, sizeof bad, cudaMemcpyDeviceToHost), "mismatch count");
        if (bad != 0) ++failures;
      }
      std::vector<float> ms, copy_ms;
      const size_t bytes = (v.write ? 4 : 2) * side + static_cast<size_t>(s.rows);  // + the mask byte, as divcheck_bench
      for (int k = 0; k < iters; ++k) {
        check(cudaMemsetAsync(b.flush, k & 0xff, b.flush_bytes), "flush");
        check(cudaEventRecord(e0), "record");
        launch();
        check(cudaEventRecord(e1), "record");
        check(cudaEventSynchronize(e1), "sync");
        float t = 0;
        check(cudaEventElapsedTime(&t, e0, e1), "elapsed");
        ms.push_back(t);
      }
      // One untimed copy first, as divcheck_bench's yardstick (bench_runner.cpp says why).
      check(cudaMemcpyAsync(b.out, b.in, bytes / 2 / 16 * 16, cudaMemcpyDeviceToDevice), "copy");
      for (int k = 0; k < iters; ++k) {
        check(cudaMemsetAsync(b.flush, k & 0xff, b.flush_bytes), "flush");
        check(cudaEventRecord(e0), "record");
        check(cudaMemcpyAsync(b.out, b.in, bytes / 2 / 16 * 16, cudaMemcpyDeviceToDevice), "copy");
        check(cudaEventRecord(e1), "record");
        check(cudaEventSynchronize(e1), "sync");
        float t = 0;
        check(cudaEventElapsedTime(&t, e0, e1), "elapsed");
        copy_ms.push_back(t);
      }
      const double gbps = static_cast<double>(bytes) / (mean(ms) * 1e-3) / 1e9;
      const double copy = static_cast<double>(bytes / 2 / 16 * 16 * 2) / (mean(copy_ms) * 1e-3) / 1e9;
      std::printf("| %s | %d x %d | %s | %s | %.3f | %.0f | %.0f | %.3f | %s |\n", s.name, s.ctas, s.threads, v.name,
                  v.direct ? "-" : std::to_string(per_sm).c_str(), mean(ms), gbps, copy, gbps / copy,
                  v.write ? std::to_string(bad).c_str() : "-");
      std::fflush(stdout);
    }
  }
  if (failures) std::printf("FAILED: %d variants wrote bytes other than their inputs\n", failures);
  return failures ? 1 : 0;
}

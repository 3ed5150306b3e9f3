// Planning and launching the logit-level divergences (device_api.hpp): the choice of the row
// kernel (logit_row_kernels.hpp: 6 row policies x 3 element types, with gradients and forward
// only (loss_only), each for one of the path sets, and the deferred forward-only KL and CE
// kernels: device_types.hpp row_variant, row_paths), of CTAs per row (thread block cluster) and
// of shared-memory staging, and the launch sequence on one stream:
//   [count_valid -> weights, when gradients are wanted] -> logit_rows_kernel
//   [-> combine_one_pass_rows, forward-only KL and CE at T = 1, KL at T = 2^k: defers_row_loss]
//   -> reduce_positions;
// or, for those deferred launches on the automatic plan (stream_plan.hpp), the streamed kernel
// (stream_rows_kernel.cuh: one CTA per tile of a row, four groups of 8192 columns by default, no
// cluster, no staging)
//   -> combine_one_pass_rows -> reduce_positions;
// the forward of the Jefferys rows at T = 1 or 2^k on that path (masked_jefferys also on the
// probability path at T = 1) and of squared Hellinger at T = 1 (centred_forward_launch) the same
// streamed kernel with centred records, then the loss-only cluster
// kernel for the rows its combine marked as not tame (launch_centred_fallback):
//   stream_rows_kernel -> combine_one_pass_rows -> logit_rows_kernel (marked rows) -> reduce_positions;
// or, for KL and cross-entropy with gradients on the same paths (one_pass_row_launch) where
// stream_rows 2 forces it (slower than the cluster kernel: bench/RESULTS.md step 56), the
// streamed kernel with gradients (stream_grad_rows_kernel.cuh: a cooperative grid of resident
// CTAs over the tiles, each tile read from HBM for the row's statistics and again from L2 for its
// gradients):
//   count_valid -> weights -> memset(arrivals) -> stream_grad_rows_kernel -> reduce_positions.
//
// Plan (automatic): 256-thread CTAs and the smallest C in {1, 2, 4, 8, 16} whose slices (both
// rows, plus the support bytes, plus the reduction records) fit a third of an SM's shared
// memory, so that three CTAs share an SM and one's loads overlap the others' arithmetic (where
// that C is 16 and the launch's kernels have a partly staged form, float32: the partly staged
// plan of 8 x 256 instead, two per SM with gradients but for Jensen-Shannon, three forward only:
// bench/RESULTS.md step 62); else
// 256-thread CTAs fitting half of it (two per SM); in each case one whose cluster the device can
// schedule (cudaOccupancyMaxActiveClusters >= 1); else the partly staged plan (16 x 256, the
// first K chunks of each slice on chip for three CTAs per SM, two for the one-pass rows with
// gradients; LogitArgs::partial_stage; float32 logits only, which run it on kernels of their own:
// device_types.hpp partly_staged) where K is at least half the slice; else 512-thread CTAs with the smallest C whose
// slices fit the opt-in shared memory of one CTA; C = 16 needs the non-portable cluster attribute. If no C can stage,
// the unstaged fallback with the largest schedulable C <= 8. The plan depends on (V, dtype, support, device), so
// results are bitwise reproducible on a given device.
#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_api.hpp"
#include "kernels/cuda/logit_row_kernels.hpp"
#include "kernels/cuda/logit_rows_kernel.cuh"
#include "kernels/cuda/plan_math.hpp"
#include "kernels/cuda/position_kernels.hpp"
#include "kernels/cuda/row_kernel_choice.cuh"
#include "kernels/cuda/stream_plan.hpp"
#include "kernels/cuda/workspace.hpp"

namespace divcheck::cuda {

namespace {

// The rows of a forward-only one-exchange launch (defers_row_loss), after the row kernel.
template <class Policy, TempForm kT>
__global__ void __launch_bounds__(256) combine_one_pass_rows(const RowKernelParams prm, unsigned ctas,
                                                             unsigned present) {
  combine_one_pass_rows_body<Policy, kT>(prm, ctas, present);
}
inline constexpr int kCombineThreads = 256;  // 8 rows per block
unsigned combine_blocks(std::int64_t rows) { return static_cast<unsigned>(std::min<std::int64_t>((rows + 7) / 8, 65535)); }

// Launches the combine kernel that row_kernel_choice.cuh visit_combine_kernel picks.
struct LaunchCombine {
  unsigned grid;
  cudaStream_t stream;
  const RowKernelParams& prm;
  unsigned ctas, present;  // combine_one_pass_rows_body's
  template <class Policy, TempForm kT>
  void operator()() const {
    combine_one_pass_rows<Policy, kT><<<grid, kCombineThreads, 0, stream>>>(prm, ctas, present);
  }
};

// The row kernels of a launch: the one every plan but a partly staged one runs, and the partly
// staged one (device_types.hpp partly_staged; float32 logits only, else nullptr).
struct RowKernels {
  RowKernel whole = nullptr;
  RowKernel partial = nullptr;
  RowKernel of(const LogitPlan& p) const { return partly_staged(p) ? partial : whole; }
};

RowKernels select_kernels(const LogitArgs& a) {
  const RowVariant variant = row_variant(a);
  const RowPaths paths = row_paths(a);
  static_assert(kPartialStageDtype == FloatKind::f32, "the partly staged kernels are float32's");
  switch (a.dtype) {
    case FloatKind::f32:
      return {row_kernel_f32(a.kind, variant, paths), row_kernel_f32_partial(a.kind, variant, paths)};
    case FloatKind::bf16: return {row_kernel_bf16(a.kind, variant, paths), nullptr};
    case FloatKind::f16: return {row_kernel_f16(a.kind, variant, paths), nullptr};
  }
  throw InvalidArgument("dtype", std::to_string(static_cast<int>(a.dtype)), "not f32, bf16 or f16");
}

void require(bool ok, const char* argument, const std::string& value, const char* why) {
  if (!ok) throw InvalidArgument(argument, value, why);
}

// pointers: also check the device pointers (a plan needs only sizes and parameters).
void validate(const LogitArgs& a, bool pointers) {
  require(a.batch >= 1, "batch", std::to_string(a.batch), "must be >= 1");
  require(a.seq >= 1, "seq", std::to_string(a.seq), "must be >= 1");
  require(a.vocab >= 1, "vocab", std::to_string(a.vocab), "must be >= 1");
  require(a.vocab <= INT_MAX, "vocab", std::to_string(a.vocab),
          "must be < 2^31 (the row kernel's slice-local indices and per-thread sums are 32-bit sized)");
  require(a.batch <= LLONG_MAX / a.seq && a.batch * a.seq <= LLONG_MAX / a.vocab, "batch*seq*vocab",
          std::to_string(a.batch) + "*" + std::to_string(a.seq) + "*" + std::to_string(a.vocab), "overflows int64");
  if (pointers) {
    require(a.p_logits != nullptr && a.q_logits != nullptr, "logits", "nullptr", "both logit tensors are required");
    require(a.loss != nullptr, "loss", "nullptr", "the loss output is required");
    require(a.workspace != nullptr, "workspace", "nullptr", "logit_workspace_bytes(batch, seq) bytes are required");
  }
  require(a.temperature > 0.0 && a.temperature <= 3.4e38, "temperature", std::to_string(a.temperature),
          "must be finite and > 0");
  const bool wants = a.grad_p != nullptr || a.grad_q != nullptr;
  require(!pointers || wants == (a.grad_output != nullptr), "grad_output", a.grad_output ? "set" : "nullptr",
          "must be given exactly when a gradient is wanted");
  if (a.capped) {
    require(a.max_loss > 0.0 && a.max_loss <= 3.4e38, "max_loss", std::to_string(a.max_loss), "must be finite and > 0");
    require(a.scaling_factor > 0.0 && a.scaling_factor <= 3.4e38, "scaling_factor", std::to_string(a.scaling_factor),
            "must be finite and > 0");
  }
  require(a.row_threads == 0 || a.row_threads == 128 || a.row_threads == 256 || a.row_threads == 512, "row_threads",
          std::to_string(a.row_threads), "must be 0 (automatic), 128, 256 or 512");
  require(a.row_grid >= 0 && a.row_grid <= 2, "row_grid", std::to_string(a.row_grid),
          "must be 0 (automatic), 1 (one cluster per row) or 2 (persistent)");
  require(a.stream_rows >= 0 && a.stream_rows <= 2, "stream_rows", std::to_string(a.stream_rows),
          "must be 0 (automatic), 1 (never) or 2 (always)");
  require(a.stream_groups >= 0 && a.stream_groups <= 64, "stream_groups", std::to_string(a.stream_groups),
          "must be 0 (automatic) or 1..64 groups per tile");
  require(a.stream_registers == 0 || a.stream_registers == 64 || a.stream_registers == 80, "stream_registers",
          std::to_string(a.stream_registers), "must be 0 (automatic), 64 or 80");
  require(a.cluster_policy >= 0 && a.cluster_policy <= 2, "cluster_policy", std::to_string(a.cluster_policy),
          "must be 0 (the driver's default), 1 (spread) or 2 (load balancing)");
  require(a.partial_stage >= 0 && a.partial_stage <= 3, "partial_stage", std::to_string(a.partial_stage),
          "must be 0 (automatic), 1 (never) or 2 or 3 (CTAs per SM)");
  require(a.partial_stage < 2 || a.dtype == kPartialStageDtype, "partial_stage", std::to_string(a.partial_stage),
          "needs float32 logits: the partly staged kernels are compiled for float32 only (16-bit slices fit "
          "whole, two 256-thread CTAs of 16 per SM, up to V of about 424000)");
  const int c = a.cluster_ctas;
  require(c == 0 || c == 1 || c == 2 || c == 4 || c == 8 || c == 16, "cluster_ctas", std::to_string(c),
          "must be 0 (automatic), 1, 2, 4, 8 or 16");
}

int device_attribute(cudaDeviceAttr attr, const char* name) {
  int dev = 0, v = 0;
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&v, attr, dev), std::string("cudaDeviceGetAttribute(") + name + ")");
  return v;
}

// The cluster kernel's launch attributes: its cluster of `ctas` CTAs and, where
// LogitArgs::cluster_policy names one, the placement preference of the cluster's CTAs. Returns how
// many of attr it filled.
unsigned cluster_attributes(int ctas, int policy, cudaLaunchAttribute (&attr)[2]) {
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(ctas);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  if (policy == 0) return 1;
  attr[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
  attr[1].val.clusterSchedulingPolicyPreference =
      policy == 1 ? cudaClusterSchedulingPolicySpread : cudaClusterSchedulingPolicyLoadBalancing;
  return 2;
}

// How many clusters of `ctas` CTAs with `smem` dynamic shared memory the device holds at once
// (cudaOccupancyMaxActiveClusters, under the launch's placement policy); 0 when it cannot run
// even one.
int resident_clusters(RowKernel fn, int ctas, int threads, std::size_t smem, int policy) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(ctas));
  cfg.blockDim = dim3(static_cast<unsigned>(threads));
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[2];
  cfg.attrs = attr;
  cfg.numAttrs = cluster_attributes(ctas, policy, attr);
  int clusters = 0;
  const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, fn, &cfg);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // a refused configuration is an answer, not a sticky error
    return 0;
  }
  return clusters;
}

struct SmemBudget {
  std::size_t one;    // dynamic shared memory one CTA may use (opt-in maximum minus static)
  std::size_t two;    // ... when two CTAs are to share an SM
  std::size_t three;  // ... when three CTAs are to share an SM
  std::size_t six;    // ... when six (128-thread) CTAs are to share an SM
};

// The dynamic shared memory a kernel may use; sets the kernel's attributes to the opt-in
// maximum (the same value every time: safe from several threads).
SmemBudget configure(RowKernel fn) {
  cudaFuncAttributes fa{};
  cuda_check(cudaFuncGetAttributes(&fa, fn), "cudaFuncGetAttributes(logit_rows_kernel)");
  const int optin = device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, "MaxSharedMemoryPerBlockOptin");
  const int per_sm = device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, "MaxSharedMemoryPerMultiprocessor");
  const int reserved = device_attribute(cudaDevAttrReservedSharedMemoryPerBlock, "ReservedSharedMemoryPerBlock");
  const int stat = static_cast<int>(fa.sharedSizeBytes);
  const int budget = std::max(0, optin - stat);
  cuda_check(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, budget),
             "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  cuda_check(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
             "cudaFuncSetAttribute(NonPortableClusterSizeAllowed)");
  auto share = [&](int k) {
    return static_cast<std::size_t>(std::max(0, std::min(budget, (per_sm - k * reserved) / k - stat)));
  };
  return {static_cast<std::size_t>(budget), share(2), share(3), share(6)};
}

// The row grid: forced (row_grid 1 or 2), else persistent for forward-only launches, where each
// cluster prefetches its next row (measured in one A/B run: KL and cross-entropy forward
// 1.06-1.36x faster; with gradients, one cluster per row was as fast or faster: bench/RESULTS.md,
// step 12), but total variation's: one cluster per row measured 1.13x (bf16, both benchmark
// shapes) and 1.03-1.04x (f32) of the persistent grid's forward, every other two-pass row
// 0.95-1.05x by shape and dtype (bench/RESULTS.md step 68).
bool persistent_grid(const LogitArgs& a) {
  if (a.row_grid != 0) return a.row_grid == 2;
  return a.grad_p == nullptr && a.grad_q == nullptr && a.kind != LogitKind::total_variation;
}

// The placement preference of the cluster kernel's CTAs: the forced one, else load balancing for a
// persistent grid, whose size is what cudaOccupancyMaxActiveClusters finds under it (with 16-CTA
// clusters the two-pass rows' forward measured 1.035-1.048x of the default placement, with 8-CTA
// clusters 1.000x: bench/RESULTS.md step 68), and the driver's default with one cluster per row
// (where load balancing measured 0.97-1.03x by plan: step 57).
int cluster_placement(const LogitArgs& a, bool persistent) {
  if (a.cluster_policy != 0) return a.cluster_policy;
  return persistent ? 2 : 0;
}

LogitPlan compute_plan(const LogitArgs& a, const RowKernels& ks) {
  const SmemBudget budget = configure(ks.whole);
  if (ks.partial) configure(ks.partial);  // (the same static shared memory, so the same budget)
  const std::size_t elem = float_kind_size(a.dtype);
  const bool support = a.support != nullptr;
  auto make = [&](int ctas, int threads, bool staged, std::int64_t kept = 0) {
    LogitPlan p;
    p.ctas = ctas;
    p.threads = threads;
    p.slice = slice_for(a.vocab, ctas);
    p.staged = staged;
    p.staged_columns = staged ? (kept > 0 ? kept : p.slice) : 0;
    p.dynamic_smem_bytes = dynamic_bytes(threads, staged, p.slice, elem, support, p.staged_columns);
    p.persistent = persistent_grid(a);
    p.cluster_policy = cluster_placement(a, p.persistent);
    return p;
  };
  auto fits = [&](int ctas, int threads, std::size_t limit) {
    return a.allow_staging && dynamic_bytes(threads, true, slice_for(a.vocab, ctas), elem, support) <= limit;
  };
  auto schedulable = [&](LogitPlan p) {
    p.resident_clusters = resident_clusters(ks.of(p), p.ctas, p.threads, p.dynamic_smem_bytes, p.cluster_policy);
    return p;
  };
  // The first K chunks of each slice that fit `per_sm` CTAs per SM (0: none fit).
  auto partial_columns = [&](int ctas, int threads, int per_sm) {
    return partial_stage_columns(per_sm == 2 ? budget.two : budget.three, threads, slice_for(a.vocab, ctas), elem,
                                 support);
  };
  if (a.partial_stage >= 2) {  // forced: C (16 unless forced) x 256 threads, the first K chunks staged
    const int ctas = a.cluster_ctas != 0 ? a.cluster_ctas : kMaxClusterCtas;
    const int threads = a.row_threads != 0 ? a.row_threads : 256;
    const std::size_t limit = a.partial_stage == 2 ? budget.two : budget.three;
    const std::int64_t slice = slice_for(a.vocab, ctas);
    const std::int64_t kept = partial_columns(ctas, threads, a.partial_stage);
    if (!a.allow_staging || fits(ctas, threads, limit) || kept == 0)
      throw InvalidArgument("partial_stage", std::to_string(a.partial_stage),
                            "needs slices (" + std::to_string(slice) + " columns of V = " + std::to_string(a.vocab) +
                                " over " + std::to_string(ctas) + " CTAs) that do not fit whole but of which a part "
                                "fits " + std::to_string(a.partial_stage) + " CTAs per SM, and staging allowed");
    LogitPlan p = schedulable(make(ctas, threads, true, kept));
    if (p.resident_clusters < 1)
      throw Unavailable("cuda backend: this device cannot schedule a partly staged cluster of " +
                        std::to_string(p.ctas) + " CTAs x " + std::to_string(p.threads) + " threads");
    return p;
  }
  if (a.cluster_ctas != 0) {
    const int threads = a.row_threads != 0 ? a.row_threads : 512;
    LogitPlan p = schedulable(make(a.cluster_ctas, threads, fits(a.cluster_ctas, threads, budget.one)));
    if (p.resident_clusters < 1)
      throw Unavailable("cuda backend: this device cannot schedule a cluster of " + std::to_string(p.ctas) +
                        " CTAs x " + std::to_string(p.threads) + " threads with " +
                        std::to_string(p.dynamic_smem_bytes) + " bytes of shared memory each");
    return p;
  }
  // (threads, the shared-memory share of one CTA): three 256-thread CTAs per SM, two, one of
  // 512 (the register cap, kRowRegisters, allows no two of 512); a forced thread count keeps
  // only its own entries. 128-thread CTAs (six or three per SM) only when forced: a benchmark
  // knob for A/B runs (bench/RESULTS.md), never the automatic choice (the 512 tier comes first).
  const std::pair<int, std::size_t> tiers[] = {{256, budget.three}, {256, budget.two}, {512, budget.one},
                                               {128, budget.six}, {128, budget.three}};
  // The automatic plan may take a partly staged one (the launch has partly staged kernels: float32
  // logits) where at least half of each slice stays on chip.
  const bool wants = a.grad_p != nullptr || a.grad_q != nullptr;
  const bool may_partly_stage = a.row_threads == 0 && a.allow_staging && a.partial_stage == 0 && ks.partial;
  auto partly_staged = [&](int ctas, int per_sm, LogitPlan& out) {
    const std::int64_t kept = partial_columns(ctas, 256, per_sm);
    if (kept == 0 || 2 * kept < slice_for(a.vocab, ctas)) return false;
    out = schedulable(make(ctas, 256, true, kept));
    return out.resident_clusters >= 1;
  };
  for (const auto& [threads, limit] : tiers) {
    if (a.row_threads != 0 && a.row_threads != threads) continue;
    if (threads == 512 && may_partly_stage) {
      // Before one 512-thread CTA per SM: the partly staged plan, 16 x 256 threads with two or
      // three CTAs per SM (step 59, f32 4096x256000: 1.22-1.46x; three per SM for every launch
      // but the one-pass rows' with gradients, whose fewer passes over the slice gained most
      // from the larger part kept, two per SM).
      LogitPlan p;
      if (partly_staged(kMaxClusterCtas, wants && one_pass_row_launch(a) ? 2 : 3, p)) return p;
    }
    for (int ctas : {1, 2, 4, 8, 16}) {
      if (!fits(ctas, threads, limit)) continue;
      if (ctas == kMaxClusterCtas && threads == 256 && limit == budget.three && may_partly_stage &&
          !(wants && a.kind == LogitKind::jensen_shannon)) {
        // Whole slices fit three CTAs per SM only in the largest cluster (f32: 64128 < V <=
        // ~129000, e.g. 128256), where each thread holds ~31 columns and the fixed cost per
        // CTA-row weighs most: the partly staged plan of half the CTAs per row, two per SM with
        // gradients (at 128256, 13056 of each slice's 16032 columns on chip: 81%), three
        // forward only (8192: 51%). Step 62, f32 8192x128256, same call: with gradients
        // 1.02-1.14x (KL, cross-entropy, ts-KL 1.13-1.14x, Jefferys 1.12x, Hellinger 1.07x,
        // total variation 1.04x), forward 1.01-1.07x; Jensen-Shannon with gradients 0.95x (two
        // per SM) and 0.97x (three): it keeps the whole slices.
        LogitPlan p;
        if (partly_staged(kMaxClusterCtas / 2, wants ? 2 : 3, p)) return p;
      }
      LogitPlan p = schedulable(make(ctas, threads, true));
      if (p.resident_clusters >= 1) return p;
    }
  }
  const int fallback_threads = a.row_threads != 0 ? a.row_threads : 512;
  for (int ctas : {8, 4, 2, 1}) {  // the unstaged fallback: every pass reads global memory
    LogitPlan p = schedulable(make(ctas, fallback_threads, false));
    if (p.resident_clusters >= 1) return p;
  }
  throw Unavailable("cuda backend: this device cannot schedule a CTA of " + std::to_string(fallback_threads) +
                    " threads for the logit row kernel");
}

// Plans are cached per (kernel, device, V, support, tuning): the occupancy queries cost tens of
// microseconds, which a benchmark's event timing would otherwise include.
LogitPlan plan_for(const LogitArgs& a, const RowKernels& ks) {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  // (cluster_policy: the placement sets the plan's resident clusters and is the plan's.)
  using Key = std::tuple<RowKernel, int, std::int64_t, bool, int, bool, int, bool, int, int>;
  static std::mutex mutex;
  static std::map<Key, LogitPlan> cache;
  const Key key{ks.whole, device, a.vocab, a.support != nullptr, a.cluster_ctas, a.allow_staging, a.row_threads,
                persistent_grid(a), a.partial_stage, a.cluster_policy};
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  const LogitPlan plan = compute_plan(a, ks);
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, plan);
  return plan;
}

// The streamed kernel (stream_rows_kernel.cuh): one CTA per tile and row (up to the grid limit;
// the kernel loops over the rest), then the combine of the tiles' messages.
void launch_streamed_rows(const LogitArgs& a, const LogitPlan& plan, const RowKernelParams& prm, cudaStream_t stream) {
  const std::int64_t rows = a.batch * a.seq;
  const auto tiles = static_cast<unsigned>(plan.ctas);
  const unsigned stride = stream_stride(plan.ctas);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(std::min<std::int64_t>(rows * plan.ctas, INT_MAX)));
  cfg.blockDim = dim3(static_cast<unsigned>(plan.threads));
  cfg.stream = stream;
  cuda_check(cudaLaunchKernelEx(&cfg, stream_row_kernel(a), prm, tiles, stride), "cudaLaunchKernelEx(stream_rows_kernel)");
  check_launch("stream_rows_kernel");
  visit_combine_kernel(a, LaunchCombine{combine_blocks(rows), stream, prm, stride, tiles});
  check_launch("combine_one_pass_rows");
}

// The CTAs the device holds at once of the streamed kernel with gradients: its cooperative grid
// (stream_grad_rows_kernel.cuh: every CTA resident, so that a CTA's wait for a row's other tiles
// ends). Cached per kernel and device.
int resident_stream_ctas(StreamGradKernel fn, int threads) {
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  static std::mutex mutex;
  static std::map<std::tuple<StreamGradKernel, int, int>, int> cache;
  const auto key = std::make_tuple(fn, device, threads);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  int per_sm = 0;
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, 0),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor(stream_grad_rows_kernel)");
  const int ctas = per_sm * device_attribute(cudaDevAttrMultiProcessorCount, "MultiProcessorCount");
  cache.emplace(key, ctas);
  return ctas;
}

// The streamed kernel with gradients (stream_grad_rows_kernel.cuh): the rows' arrivals zeroed,
// then a cooperative launch of min(items, resident CTAs) CTAs; the kernel writes each row's loss
// (no combine step).
void launch_streamed_grad_rows(const LogitArgs& a, const LogitPlan& plan, const RowKernelParams& prm,
                               const LogitWorkspace& ws, cudaStream_t stream) {
  const std::int64_t items = a.batch * a.seq * plan.ctas;
  cuda_check(cudaMemsetAsync(ws.arrivals, 0, LogitWorkspace::arrival_bytes(a.batch, a.seq), stream),
             "cudaMemsetAsync(stream arrivals)");
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(std::min<std::int64_t>(items, plan.resident_clusters)));
  cfg.blockDim = dim3(static_cast<unsigned>(plan.threads));
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cuda_check(cudaLaunchKernelEx(&cfg, stream_grad_row_kernel(a), prm, static_cast<unsigned>(plan.ctas),
                                stream_stride(plan.ctas), ws.arrivals),
             "cudaLaunchKernelEx(stream_grad_rows_kernel, cooperative)");
  check_launch("stream_grad_rows_kernel");
}

// The cluster kernel: one cluster per row (up to the grid limit; the kernel loops over the rest),
// or, persistent, the clusters the device holds at once (bench/RESULTS.md, steps 4 and 12); then
// the combine where the launch is deferred.
void launch_cluster_rows(const LogitArgs& a, const LogitPlan& plan, RowKernel fn, const RowKernelParams& prm,
                         cudaStream_t stream) {
  const std::int64_t rows = a.batch * a.seq;
  const std::int64_t clusters =
      std::min<std::int64_t>(rows, plan.persistent ? plan.resident_clusters : INT_MAX / plan.ctas);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * plan.ctas));
  cfg.blockDim = dim3(static_cast<unsigned>(plan.threads));
  cfg.dynamicSmemBytes = plan.dynamic_smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  cfg.attrs = attr;
  cfg.numAttrs = cluster_attributes(plan.ctas, plan.cluster_policy, attr);
  cuda_check(cudaLaunchKernelEx(&cfg, fn, prm), "cudaLaunchKernelEx(logit_rows_kernel, " +
                                                    std::to_string(plan.ctas) + " CTAs per cluster)");
  check_launch("logit_rows_kernel");
  if (defers_row_loss(a)) {
    const auto ctas = static_cast<unsigned>(plan.ctas);
    visit_combine_kernel(a, LaunchCombine{combine_blocks(rows), stream, prm, ctas, ctas});
    check_launch("combine_one_pass_rows");
  }
}

// The rows of a centred forward (Jefferys, Hellinger: centred_forward_launch) that are not tame, which its
// combine marked (LogitWorkspace::fallback_of): the cluster kernel's loss-only launch again, with
// the marks as its position mask, so it reads and writes only those rows (a row with mark 0 is
// inert there: no read, no loss written). Where every row is tame, its clusters only look at the
// marks.
void launch_centred_fallback(const LogitArgs& a, const LogitWorkspace& ws, cudaStream_t stream) {
  LogitArgs f = a;
  f.valid = LogitWorkspace::fallback_of(ws.row_loss, a.batch, a.seq);
  const RowKernels ks = select_kernels(f);
  const LogitPlan plan = plan_for(f, ks);
  launch_cluster_rows(f, plan, ks.of(plan), make_row_params(f, plan, ws.row_loss, nullptr), stream);
}

// The streamed plan (stream_plan.hpp) with, for a launch with gradients, its grid: the CTAs the
// device holds at once.
// Where the device holds too few CTAs for the kernel's forward progress (stream_grad_grid_ok), the
// launch takes the cluster kernel (an Unavailable error where stream_rows 2 forces the streamed one).
LogitPlan device_stream_plan(const LogitArgs& a) {
  LogitPlan p = stream_plan(a);
  if (!p.streamed || (a.grad_p == nullptr && a.grad_q == nullptr)) return p;
  p.resident_clusters = resident_stream_ctas(stream_grad_row_kernel(a), p.threads);
  const std::int64_t items = a.batch * a.seq * p.ctas;
  if (stream_grad_grid_ok(std::min<std::int64_t>(items, p.resident_clusters), p.ctas)) return p;
  if (a.stream_rows == 2)
    throw Unavailable("cuda backend: the streamed kernel with gradients needs more than (tiles - 1) / 2 = " +
                      std::to_string((p.ctas - 1) / 2) + " resident CTAs; this device holds " +
                      std::to_string(p.resident_clusters));
  return LogitPlan{};
}

}  // namespace

std::size_t logit_workspace_bytes(std::int64_t batch, std::int64_t seq) { return LogitWorkspace::bytes(batch, seq); }

LogitPlan plan_logit_divergence(const LogitArgs& a) {
  validate(a, false);
  const LogitPlan streamed = device_stream_plan(a);
  if (streamed.streamed) return streamed;
  return plan_for(a, select_kernels(a));
}

LogitPlan launch_logit_divergence(const LogitArgs& a, cudaStream_t stream) {
  validate(a, true);
  const LogitPlan streamed = device_stream_plan(a);
  const RowKernels ks = streamed.streamed ? RowKernels{} : select_kernels(a);
  const LogitPlan plan = streamed.streamed ? streamed : plan_for(a, ks);
  const LogitWorkspace ws = LogitWorkspace::carve(a.workspace, a.batch, a.seq);
  const bool wants = a.grad_output != nullptr;

  if (wants) {
    launch_count_valid(a.valid, a.batch, a.seq, ws.counts, ws.total, stream);
    launch_position_weights(a.batch, a.reduction, a.grad_output, 1.0 / a.temperature, ws.counts, ws.total, ws.coef,
                            stream);
  }

  const RowKernelParams prm = make_row_params(a, plan, ws.row_loss, wants ? ws.coef : nullptr);
  if (plan.streamed && wants) launch_streamed_grad_rows(a, plan, prm, ws, stream);
  else if (plan.streamed) launch_streamed_rows(a, plan, prm, stream);
  else launch_cluster_rows(a, plan, ks.of(plan), prm, stream);
  if (plan.streamed && centred_forward_launch(a)) launch_centred_fallback(a, ws, stream);
  launch_reduce_positions(a.valid, a.batch, a.seq, a.reduction, ws.row_loss, ws.seq_loss, a.loss, stream);
  return plan;
}

}  // namespace divcheck::cuda

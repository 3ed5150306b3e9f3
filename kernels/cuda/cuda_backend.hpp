// The CUDA backend with explicit tuning options (tests and benchmarks use them to force a
// cluster size or the unstaged path); make_cuda_backend() (kernels/backend.hpp) is this with
// the defaults. Rows served: the ten of issue 3 (every row except fused_linear and dcor).
#pragma once

#include <memory>

#include "kernels/backend.hpp"
#include "kernels/cuda/device_types.hpp"

namespace divcheck::cuda {

struct CudaOptions {
  int cluster_ctas = 0;       // 0: automatic plan; else 1, 2, 4, 8 or 16 CTAs per row
  bool allow_staging = true;  // false: every pass reads global memory (the fallback path)
  bool allow_tame = true;     // false: tame rows take the general forms too (LogitArgs::allow_tame)
  // When set, each logit-row run stores here how many positions took the tame forms (tests).
  std::int64_t* tame_rows_out = nullptr;
  int row_threads = 0;        // 0: automatic; else 128, 256 or 512 threads per CTA
  int row_grid = 0;           // 0: automatic; 1: one cluster per row; 2: persistent (LogitArgs::row_grid)
  // When set, each logit-row run stores here how many rows were prefetched (kPrefetchedRowsCounter).
  std::int64_t* prefetched_rows_out = nullptr;
  int stream_rows = 0;        // 0: automatic; 1: never; 2: always (LogitArgs::stream_rows, stream_plan.hpp)
  int stream_groups = 0;      // 0: automatic; else groups per tile of the streamed kernel (LogitArgs::stream_groups)
  int stream_registers = 0;   // 0: automatic (stream_plan.hpp); 64 or 80: the streamed kernel's register cap
  int cluster_policy = 0;     // 0: automatic; 1 spread; 2 load balancing (LogitArgs::cluster_policy)
  int partial_stage = 0;      // 0: automatic; 1 never; 2 or 3: a partly staged plan (LogitArgs::partial_stage)
  bool pow2_kernels = true;   // false: T = 2^k takes the reciprocal's kernels (LogitArgs::pow2_kernels)
};

// Throws Unavailable when no CUDA device is visible.
std::unique_ptr<Backend> make_cuda_backend_with(const CudaOptions& options);

// The execution plan (CTAs per row, shared-memory staging) the backend uses for a validated
// case of a logit row; needs a device. For tests and reports.
LogitPlan plan_for_case(const Case& c, const CudaOptions& options);

// True for the registry rows the CUDA backend implements.
bool cuda_supports(DivergenceId id);

}  // namespace divcheck::cuda

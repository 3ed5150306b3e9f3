// The facts a benchmark JSON needs to be read on its own (dashboards, bench/ab_compare.py): which
// divcheck, which GPU. Google Benchmark's context names the host and its CPUs only, and the same
// kernels run 1.4x apart in fraction of the copy on an H100 and an H200 (bench/RESULTS.md), so a
// number without its card is not a result. Added to the JSON's "context" object as strings:
//   divcheck_git_sha, divcheck_assertions ("on" / "off": NDEBUG; Google Benchmark's own
//   "library_build_type" is the benchmark library's, not divcheck's),
//   gpu_name, gpu_compute_capability ("9.0"), gpu_sm_count, gpu_max_sm_clock_mhz,
//   gpu_max_memory_clock_mhz, gpu_memory_bus_bits, gpu_l2_bytes, gpu_memory_bytes,
//   nvidia_driver, cuda_driver_api, cuda_runtime.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace divcheck::bench {

// The (key, value) pairs above for the current CUDA device; the GPU keys are absent when no
// device is visible (the benchmark does not run then).
std::vector<std::pair<std::string, std::string>> device_context();

// Adds device_context() to Google Benchmark's context (call before RunSpecifiedBenchmarks).
void add_device_context();

}  // namespace divcheck::bench

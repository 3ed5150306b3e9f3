// bench_context.hpp. The git revision, the GPU's name and the driver and runtime versions come from
// the gate's environment (cli/environment.hpp: the same strings as report.json); the device
// attributes from the CUDA runtime.
#include "bench/bench_context.hpp"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "cli/environment.hpp"

namespace divcheck::bench {

namespace {

// One integer attribute of the current device, "unknown" when the runtime does not give it.
std::string attribute(cudaDeviceAttr attr, long long scale_divisor = 1) {
  int device = 0;
  int value = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess)
    return "unknown";
  return std::to_string(static_cast<long long>(value) / scale_divisor);
}

std::string total_memory_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return "unknown";
  return std::to_string(total_bytes);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> device_context() {
  const report::Environment env = gate::collect_environment();
  std::vector<std::pair<std::string, std::string>> kv;
  kv.emplace_back("divcheck_git_sha", env.git_sha);
#ifdef NDEBUG
  kv.emplace_back("divcheck_assertions", "off");
#else
  kv.emplace_back("divcheck_assertions", "on");
#endif
  if (!env.gpu) return kv;
  kv.emplace_back("gpu_name", env.gpu->name);
  kv.emplace_back("gpu_compute_capability",
                  attribute(cudaDevAttrComputeCapabilityMajor) + "." + attribute(cudaDevAttrComputeCapabilityMinor));
  kv.emplace_back("gpu_sm_count", attribute(cudaDevAttrMultiProcessorCount));
  kv.emplace_back("gpu_max_sm_clock_mhz", attribute(cudaDevAttrClockRate, 1000));            // kHz
  kv.emplace_back("gpu_max_memory_clock_mhz", attribute(cudaDevAttrMemoryClockRate, 1000));  // kHz
  kv.emplace_back("gpu_memory_bus_bits", attribute(cudaDevAttrGlobalMemoryBusWidth));
  kv.emplace_back("gpu_l2_bytes", attribute(cudaDevAttrL2CacheSize));
  kv.emplace_back("gpu_memory_bytes", total_memory_bytes());
  kv.emplace_back("nvidia_driver", env.gpu->driver_version);
  kv.emplace_back("cuda_driver_api", env.gpu->cuda_driver_api);
  kv.emplace_back("cuda_runtime", env.gpu->cuda_runtime);
  return kv;
}

void add_device_context() {
  for (const auto& [key, value] : device_context()) benchmark::AddCustomContext(key, value);
}

}  // namespace divcheck::bench

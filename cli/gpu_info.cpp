// GPU facts for report.json, through the CUDA runtime API when the build has CUDA
// (DIVCHECK_WITH_CUDART), plus the kernel driver version from /proc/driver/nvidia/version.
// Compiled by the host compiler; no kernels here.
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/environment.hpp"

#ifdef DIVCHECK_WITH_CUDART
#include <cuda_runtime_api.h>
#endif

namespace divcheck::gate {

namespace {

[[maybe_unused]] std::string nvidia_kernel_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "unknown";
  return parse_nvidia_driver_version(line);
}

[[maybe_unused]] std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

std::string parse_nvidia_driver_version(const std::string& line) {
  std::istringstream words(line);
  std::string w;
  while (words >> w) {
    const bool dotted_number = std::isdigit(static_cast<unsigned char>(w.front())) && w.find('.') != std::string::npos &&
                               w.find_first_not_of("0123456789.") == std::string::npos;
    if (dotted_number) return w;
  }
  return "unknown";
}

void collect_gpu_info(report::Environment& env) {
#ifdef DIVCHECK_WITH_CUDART
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    env.gpu_unavailable_reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    return;
  }
  if (count == 0) {
    env.gpu_unavailable_reason = "no CUDA device visible";
    return;
  }
  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceProp prop{};
  err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) {
    env.gpu_unavailable_reason = std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(err);
    return;
  }
  report::GpuInfo g;
  g.name = prop.name;
  g.driver_version = nvidia_kernel_driver_version();
  int v = 0;
  g.cuda_driver_api = cudaDriverGetVersion(&v) == cudaSuccess ? cuda_version_string(v) : "unknown";
  g.cuda_runtime = cudaRuntimeGetVersion(&v) == cudaSuccess ? cuda_version_string(v) : "unknown";
  env.gpu = g;
#else
  env.gpu_unavailable_reason = "built without the CUDA toolkit (DIVCHECK_HAVE_CUDA=OFF)";
#endif
}

}  // namespace divcheck::gate

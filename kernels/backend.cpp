// The public entry point (validate, then run) and the CUDA backend's availability. The CUDA
// backend itself lives in kernels/cuda/ (issue 3); without CUDA in the build, or without a
// visible device, make_cuda_backend() explains why it cannot run.
#include "kernels/backend.hpp"

#include <string>

#include "core/errors.hpp"

#if defined(DIVCHECK_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace divcheck {

Outputs compute(const Backend& backend, const Case& c) {
  validate_case(c);
  return backend.run(c);
}

namespace {

// Empty when a device is visible, else the reason.
std::string cuda_absence_reason() {
#if defined(DIVCHECK_HAVE_CUDA)
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  if (count < 1) return "cudaGetDeviceCount: 0 devices";
  return {};
#else
  return "this build has no CUDA (configured without the CUDA toolkit or with DIVCHECK_DISABLE_CUDA)";
#endif
}

}  // namespace

bool cuda_device_present() { return cuda_absence_reason().empty(); }

std::unique_ptr<Backend> make_cuda_backend() {
  const std::string why = cuda_absence_reason();
  if (!why.empty()) throw Unavailable("cuda backend: no CUDA device visible (" + why + ")");
#if defined(DIVCHECK_HAVE_CUDA)
  return cuda::make_cuda_backend_with(cuda::CudaOptions{});
#else
  throw Unavailable("cuda backend: not in this build");  // unreachable: why is non-empty without CUDA
#endif
}

}  // namespace divcheck

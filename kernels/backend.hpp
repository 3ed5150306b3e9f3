// The backend interface. Every implementation (cpu, cuda, external results, the deliberately
// broken test backends) computes the same thing: the loss of a Case and the gradients it asks
// for, per SPEC.md and docs/semantics.md.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/case.hpp"

namespace divcheck {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // False for a divergence this backend does not implement (yet); the gate reports such rows
  // as "not run: unsupported by backend", never as passed.
  virtual bool supports(DivergenceId) const { return true; }
  // Computes loss and requested gradients. The case has been validated by `compute`.
  virtual Outputs run(const Case& c) const = 0;
};

// Validate, then run. This is the public API entry point: invalid input throws
// InvalidArgument before anything is computed.
Outputs compute(const Backend& backend, const Case& c);

// The float32 CPU backend (always available).
std::unique_ptr<Backend> make_cpu_backend();

// True when a CUDA device is visible to this process.
bool cuda_device_present();
// The CUDA backend; throws Unavailable (with the reason) when it cannot run here.
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace divcheck

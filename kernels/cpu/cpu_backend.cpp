// The float32 CPU backend: a dispatch table indexed by DivergenceId, one entry per registry row.
#include <array>
#include <memory>

#include "kernels/backend.hpp"
#include "kernels/cpu/dcor.hpp"
#include "kernels/cpu/fused_linear.hpp"
#include "kernels/cpu/logit_divergences.hpp"
#include "kernels/cpu/tvd_prob.hpp"

namespace divcheck {

namespace {

using Impl = Outputs (*)(const Case&);

template <cpu::RowKernel K>
Outputs logit_row(const Case& c) {
  return cpu::run_logit_divergence(c, K);
}

// In DivergenceId order; the static_assert makes a new registry row without a CPU
// implementation a compile error.
constexpr std::array<Impl, 12> kCpuTable = {
    &logit_row<&cpu::kl_row>,                 // masked_kl_divergence
    &logit_row<&cpu::jefferys_row>,           // masked_jefferys_divergence
    &logit_row<&cpu::cross_entropy_row>,      // masked_cross_entropy
    &logit_row<&cpu::jefferys_row>,           // jefferys_divergence
    &logit_row<&cpu::jensen_shannon_row>,     // jensen_shannon_divergence
    &logit_row<&cpu::hellinger_row>,          // squared_hellinger_distance
    &logit_row<&cpu::total_variation_row>,    // total_variation
    &logit_row<&cpu::kl_row>,                 // temperature_scaled_masked_kl_divergence
    &logit_row<&cpu::jefferys_row>,           // temperature_scaled_masked_jefferys_divergence
    &cpu::run_fused_linear,                   // fused_linear_masked_kl_divergence
    &cpu::run_dcor,                           // masked_unbiased_dcor
    &cpu::run_tvd_prob,                       // tvd_prob
};
static_assert(kCpuTable.size() == kNumDivergences, "one CPU implementation per registry row");
static_assert(static_cast<std::size_t>(DivergenceId::tvd_prob) == kNumDivergences - 1, "table order = DivergenceId order");

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  Outputs run(const Case& c) const override { return kCpuTable[static_cast<std::size_t>(c.id)](c); }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace divcheck

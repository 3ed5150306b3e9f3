// The registry: one row per divergence of SPEC.md (the project's analogue of PyTorch's OpInfo).
// Tests, property generators, the gate, benchmarks, reports and the CLI iterate over this
// table. Implementations (reference, cpu, cuda) keep a dispatch table indexed by DivergenceId
// with a static_assert on kNumDivergences, so adding a row without its implementations fails
// to compile.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace divcheck {

enum class DivergenceId : std::uint8_t {
  masked_kl_divergence,
  masked_jefferys_divergence,
  masked_cross_entropy,
  jefferys_divergence,
  jensen_shannon_divergence,
  squared_hellinger_distance,
  total_variation,
  temperature_scaled_masked_kl_divergence,
  temperature_scaled_masked_jefferys_divergence,
  fused_linear_masked_kl_divergence,
  masked_unbiased_dcor,
  tvd_prob,
};
inline constexpr std::size_t kNumDivergences = 12;

// What a tensor role is; decides its allowed dtypes and how generators fill it.
enum class RoleKind : std::uint8_t {
  logits,        // (B,T,V) float; softmax over V
  probabilities, // (N,V) float probability rows (tvd_prob)
  position_mask, // (B,T) any integer/bool dtype, non-zero = valid
  support_mask,  // (B,T,V) any integer/bool dtype, non-zero = column kept
  labels,        // (N,) integer, ignore_index marks ignored rows
  hidden,        // (B,T,H) float
  weight,        // (V,H) float
  samples,       // (B,T,D) float
};

// Which probability a logit/probability role feeds in SPEC.md's notation.
enum class Side : std::uint8_t { none, p, q };

struct RoleSpec {
  std::string_view name;
  RoleKind kind;
  std::array<std::string_view, 3> dims;  // symbolic dims, "" = unused; e.g. {"B","T","V"}
  bool optional;
  bool differentiable;  // a gradient may be requested for it
  Side side;
};

enum class ParamKind : std::uint8_t {
  log_target, max_loss, scaling_factor, temperature, reduction, jsd_beta, chunk_size, safety_factor,
};

// Metamorphic and structural facts a row declares; properties test exactly the declared ones.
struct RowProperties {
  bool nonnegative = true;
  std::optional<double> upper_bound;   // per position: TV <= 1, JS <= ln 2, H^2 <= 1, dcor <= 1
  bool symmetric = false;              // swapping the two distributions leaves the value unchanged
  bool zero_on_identical = true;       // identical inputs give loss 0 (and gradients 0)
  bool shift_invariant = true;         // adding a constant to a logit row changes nothing
  bool permutation_invariant = true;   // permuting the vocabulary (all V-indexed tensors) alike
  bool mask_invariant = true;          // masked positions are inert
  bool grad_rows_sum_zero = true;      // every logit-gradient row sums to 0
  bool has_log_target = false;         // two numerical paths that must agree
  bool has_reduction_none = false;     // "none" averages to "mean"
};

// Tolerance constant c of the bound |y - r| <= c * u * scale(r) (+ final rounding), per output.
// The derivations are in docs/tolerances.md; every number there has its reason.
struct ToleranceSpec {
  double loss_c;   // for the loss
  double grad_c;   // for every gradient
};

struct BenchShape {
  std::int64_t rows;  // B*T (or N)
  std::int64_t vocab; // V (or D for dcor)
  std::int64_t hidden = 0;
};

struct DivergenceInfo {
  DivergenceId id;
  std::string_view name;
  std::string_view summary;
  std::vector<RoleSpec> roles;
  std::vector<ParamKind> params;
  std::vector<std::string_view> reductions;  // allowed values; empty = no reduction parameter
  std::string_view default_reduction;        // the reduction used when the parameter is absent
  bool default_log_target = true;
  RowProperties props;
  ToleranceSpec tolerance;
  std::vector<BenchShape> bench_shapes;

  const RoleSpec* role(std::string_view n) const;
  bool accepts(ParamKind k) const;  // k is one of params
};

const std::vector<DivergenceInfo>& registry();
const DivergenceInfo& info(DivergenceId id);
// Look up a row by name; nullptr when unknown.
const DivergenceInfo* find_divergence(std::string_view name);
std::string_view name_of(DivergenceId id);
std::string_view param_name(ParamKind k);

}  // namespace divcheck

// A Case: one divergence, its parameters, its named input tensors, the upstream gradient,
// which gradients are wanted, and where it came from. Everything a backend and the reference
// need, and what a case file stores.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "core/tensor.hpp"

namespace divcheck {

// The union of all divergence parameters. Which ones apply to a divergence, their defaults and
// their domains are in its registry row; unused ones keep their defaults and are ignored.
struct Params {
  bool log_target = true;               // masked_kl (default true), masked_jefferys (default false)
  std::optional<double> max_loss;       // masked_cross_entropy
  double scaling_factor = 1.0;          // masked_cross_entropy
  double temperature = 1.0;             // temperature-scaled and fused-linear
  std::string reduction;                // "mean", "none", "token_mean", "sequence_mean", "sum", "batchmean"
  double jsd_beta = 0.0;                // fused-linear: 0 (forward KL) or 1 (reverse KL)
  std::int64_t chunk_size = 1024;       // fused-linear, CPU path token block
  double safety_factor = 100.0;         // dcor
  std::int64_t ignore_index = -100;     // tvd_prob labels
  bool operator==(const Params&) const = default;
};

// Where a case came from: enough to regenerate it and to explain it in a report.
struct Provenance {
  std::string family;     // generator family, e.g. "identical_rows"
  std::uint64_t seed = 0; // generator seed
  std::string note;       // free text (e.g. "shrunk from ...")
};

struct Case {
  DivergenceId id = DivergenceId::masked_kl_divergence;
  Params params;
  std::map<std::string, Tensor> inputs;  // role name -> tensor; absent optional roles are omitted
  Tensor grad_output;                    // float32, the shape of the loss (scalar, (B,), (N,V))
  std::vector<std::string> wants_grad;   // role names whose gradients are requested
  Provenance provenance;

  const Tensor* input(const std::string& role) const {
    auto it = inputs.find(role);
    return it == inputs.end() ? nullptr : &it->second;
  }
  bool wants(const std::string& role) const {
    for (const auto& r : wants_grad)
      if (r == role) return true;
    return false;
  }
};

// What an implementation returns: the loss (float32) and one gradient per wanted role, in the
// dtype and shape of that role's tensor.
struct Outputs {
  Tensor loss;
  std::map<std::string, Tensor> grads;
};

// Check a case against its registry row and SPEC.md (roles, shapes, dtypes, parameter domains,
// grad_output shape, wanted gradients). Throws InvalidArgument naming the argument and value.
void validate_case(const Case& c);

// The shape of the loss for a case (after validation): () or (B,) or (N, V).
Shape loss_shape(const Case& c);

}  // namespace divcheck

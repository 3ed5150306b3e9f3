// Deliberately broken backends: test fixtures that prove the property suite and the nightly
// gate catch real kernel bugs. NEVER part of the product (static library
// divcheck_broken_backends, linked only by tests).
//
// Each backend delegates to the real CPU backend except for the divergence(s) it breaks, which
// it computes with one known bug (and otherwise correctly, in double precision, rounded once,
// with the masking and non-finite rules of docs/semantics.md), so a failure it causes is the
// bug and nothing else. The bugs:
//
//   tvd_two_way_select    tvd_prob and total_variation gradients with sgn(p - q) written as
//                         (p > q ? +1 : -1): every tie p == q gets -1 instead of 0. The seed bug
//                         (LigerTVDLoss, seeds/000). Caught by: identical rows / self-
//                         distillation, padded vocabulary (0 == 0), any exact tie.
//   nan_on_fully_masked   the per-sequence rows compute s_b = sum m ell / sum m without the
//                         n_b = 0 guard: a fully masked sequence makes the loss NaN (0/0) and,
//                         as autograd would, every gradient of that sequence NaN. Caught by: a
//                         sequence with no valid position.
//   no_max_subtraction    masked_kl_divergence and temperature_scaled_masked_kl_divergence
//                         compute softmax as exp(z) / sum exp(z) with float32's exp range:
//                         overflow to inf/inf = NaN above z ~ 88.7, 0/0 below z ~ -104 for a
//                         whole row. Caught by: large logits (1e4, 65504, bf16 max), low T.
//   wrong_temperature_factor
//                         temperature_scaled_masked_kl_divergence gradients without the 1/T
//                         chain-rule factor. Caught by: any T != 1.
//   masked_position_leaks masked_kl_divergence and temperature_scaled_masked_kl_divergence
//                         compute every position, masked or not, and masked positions' ell
//                         enter the sums (and get gradients). Caught by: garbage or just other
//                         values at masked positions, gradients at masked positions != 0.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/registry.hpp"
#include "kernels/backend.hpp"

namespace divcheck {

struct BrokenBackendInfo {
  std::string_view name;               // also the backend's name()
  std::string_view bug;                // one line
  std::vector<DivergenceId> breaks;    // the rows it computes wrongly (all others: the CPU backend)
  std::string_view caught_by;          // the inputs that expose it
};

// The catalogue above, in a fixed order.
const std::vector<BrokenBackendInfo>& broken_backend_catalog();

// Every broken backend, named (the names of the catalogue).
std::vector<std::pair<std::string, std::unique_ptr<Backend>>> make_broken_backends();

// One broken backend by name; throws InvalidArgument("broken backend", name, ...) for an
// unknown name.
std::unique_ptr<Backend> make_broken_backend(std::string_view name);

}  // namespace divcheck

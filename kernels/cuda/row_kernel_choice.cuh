// Which instantiation of the logit row kernel (logit_rows_body<Elem, Policy, kDeferred, kPaths>)
// a launch runs, as one table for the launcher (logit_row_kernels.cuh) and the kernel emulator
// (tests/cuda/emulation), so that the two cannot drift. device_types.hpp row_variant and
// row_paths give the variant and the path set of a launch; this maps them to a policy and the
// kernel's template arguments:
//   deferred:  KL and cross-entropy at T = 1 (plain_unit_t), KL at T = 2^k (plain_pow2_t) and by
//              the reciprocal (plain_recip_t);
//   loss_only: LossOnly<Policy> with every path (RowPaths::all), but plain_pow2_t, plain_recip_t
//              and prob_unit_t, which have LossOnly kernels of their own (plain_pow2_t and
//              plain_recip_t: Jefferys, the one two-pass policy with temperature kernels; KL's
//              forward-only launches there are deferred; prob_unit_t: KL and Jefferys);
//   full:      the policy with the launch's path set.
// plain_pow2_t and plain_recip_t exist only for the kinds of has_temperature_kernels (KL, Jefferys: the policies
// of the temperature rows), prob_unit_t for has_probability_kernels (KL, Jefferys: the policies
// of the rows with log_target). visit is called as visit.template operator()<Policy, kDeferred,
// kPaths>() and its result returned; a combination no launch takes is an InvalidArgument.
// visit_combine_kernel: the same for the combine step after a deferred row kernel.
#pragma once

#include <string>

#include "core/errors.hpp"
#include "kernels/cuda/device_types.hpp"
#include "kernels/cuda/row_policies.cuh"

namespace divcheck::cuda {

namespace row_choice_detail {

[[noreturn]] inline void refuse(const char* argument, int value, const char* why) {
  throw InvalidArgument(argument, std::to_string(value), why);
}

template <class Policy, LogitKind kKind, class Visit>
decltype(auto) visit_policy(RowVariant variant, RowPaths paths, Visit&& visit) {
  constexpr bool kPow2 = has_temperature_kernels(kKind), kProb = has_probability_kernels(kKind);
  const bool temperature_paths = paths == RowPaths::plain_pow2_t || paths == RowPaths::plain_recip_t;
  if (temperature_paths && !kPow2)
    refuse("paths", static_cast<int>(paths), "this kind has no temperature kernels (has_temperature_kernels)");
  if (paths == RowPaths::prob_unit_t && !kProb)
    refuse("paths", static_cast<int>(paths), "this kind has no probability-path kernels (has_probability_kernels)");
  if (variant == RowVariant::loss_only) {
    if constexpr (kProb) {
      if (paths == RowPaths::prob_unit_t)
        return visit.template operator()<LossOnly<Policy>, false, RowPaths::prob_unit_t>();
    }
    if constexpr (kPow2 && Policy::kOnePass == 0) {
      if (paths == RowPaths::plain_pow2_t)
        return visit.template operator()<LossOnly<Policy>, false, RowPaths::plain_pow2_t>();
      if (paths == RowPaths::plain_recip_t)
        return visit.template operator()<LossOnly<Policy>, false, RowPaths::plain_recip_t>();
    } else {
      if (temperature_paths)
        refuse("paths", static_cast<int>(paths), "a forward-only one-pass launch at T != 1 is deferred");
    }
    return visit.template operator()<LossOnly<Policy>, false, RowPaths::all>();
  }
  switch (paths) {
    case RowPaths::plain_unit_t: return visit.template operator()<Policy, false, RowPaths::plain_unit_t>();
    case RowPaths::plain_pow2_t:
      if constexpr (kPow2) return visit.template operator()<Policy, false, RowPaths::plain_pow2_t>();
      break;  // (refused above)
    case RowPaths::plain_recip_t:
      if constexpr (kPow2) return visit.template operator()<Policy, false, RowPaths::plain_recip_t>();
      break;  // (refused above)
    case RowPaths::plain_scaled_t: return visit.template operator()<Policy, false, RowPaths::plain_scaled_t>();
    case RowPaths::prob_unit_t:
      if constexpr (kProb) return visit.template operator()<Policy, false, RowPaths::prob_unit_t>();
      break;  // (refused above)
    case RowPaths::general: return visit.template operator()<Policy, false, RowPaths::general>();
    case RowPaths::all: break;
  }
  refuse("paths", static_cast<int>(paths), "not the path set of a launch with gradients");
}

}  // namespace row_choice_detail

template <class Visit>
decltype(auto) visit_row_kernel(LogitKind k, RowVariant variant, RowPaths paths, Visit&& visit) {
  using row_choice_detail::refuse;
  using row_choice_detail::visit_policy;
  if (variant == RowVariant::deferred) {  // the forward-only one-exchange kernels
    if (k == LogitKind::kl && paths == RowPaths::plain_pow2_t)
      return visit.template operator()<KlPolicy, true, RowPaths::plain_pow2_t>();
    if (k == LogitKind::kl && paths == RowPaths::plain_recip_t)
      return visit.template operator()<KlPolicy, true, RowPaths::plain_recip_t>();
    if (paths != RowPaths::plain_unit_t)
      refuse("paths", static_cast<int>(paths),
             "a deferred kernel is plain at T = 1 (or, for KL, at T = 2^k or by the reciprocal)");
    if (k == LogitKind::kl) return visit.template operator()<KlPolicy, true, RowPaths::plain_unit_t>();
    if (k == LogitKind::cross_entropy) return visit.template operator()<CrossEntropyPolicy, true, RowPaths::plain_unit_t>();
    refuse("kind", static_cast<int>(k), "has no deferred row kernel (not KL or cross-entropy)");
  }
  using K = LogitKind;
  switch (k) {
    case K::kl: return visit_policy<KlPolicy, K::kl>(variant, paths, visit);
    case K::jefferys: return visit_policy<JefferysPolicy, K::jefferys>(variant, paths, visit);
    case K::cross_entropy:
      return visit_policy<CrossEntropyPolicy, K::cross_entropy>(variant, paths, visit);
    case K::jensen_shannon:
      return visit_policy<JensenShannonPolicy, K::jensen_shannon>(variant, paths, visit);
    case K::hellinger: return visit_policy<HellingerPolicy, K::hellinger>(variant, paths, visit);
    case K::total_variation:
      return visit_policy<TotalVariationPolicy, K::total_variation>(variant, paths, visit);
  }
  refuse("kind", static_cast<int>(k), "not a logit row kernel");
}

// The policy and temperature form of a one-pass row's one-exchange launch (one_pass_row_launch:
// the streamed kernels with gradients, stream_grad_row_kernels.cu), and the step after a deferred
// launch's row kernel (defers_row_loss): combine_one_pass_rows_body
// <Policy, kT> with the deferred kernel's policy and temperature form (KL or cross-entropy at
// T = 1, KL at T = 2^k or by the reciprocal). visit is called as visit.template operator()<Policy, kT>().
template <class Visit>
decltype(auto) visit_one_pass_kernel(const LogitArgs& a, Visit&& visit) {
  if (!one_pass_row_launch(a))
    row_choice_detail::refuse("kind", static_cast<int>(a.kind), "the launch is not a one-pass row's one exchange");
  if (row_paths(a) == RowPaths::plain_pow2_t) return visit.template operator()<KlPolicy, TempForm::power_of_two>();
  if (row_paths(a) == RowPaths::plain_recip_t) return visit.template operator()<KlPolicy, TempForm::reciprocal>();
  if (a.kind == LogitKind::kl) return visit.template operator()<KlPolicy, TempForm::unit>();
  return visit.template operator()<CrossEntropyPolicy, TempForm::unit>();
}

// The centred forward (centred_forward_launch) runs only the streamed kernel and its combine:
// HellingerCentredPolicy at T = 1, or JefferysCentredPolicy at T = 1 (the log-softmax and the
// probability path alike: the records are the same) or T = 2^k.
template <class Visit>
decltype(auto) visit_combine_kernel(const LogitArgs& a, Visit&& visit) {
  if (centred_forward_launch(a) && a.kind == LogitKind::hellinger)
    return visit.template operator()<HellingerCentredPolicy, TempForm::unit>();
  if (centred_forward_launch(a)) {
    if (row_paths(a) == RowPaths::plain_pow2_t)
      return visit.template operator()<JefferysCentredPolicy, TempForm::power_of_two>();
    return visit.template operator()<JefferysCentredPolicy, TempForm::unit>();
  }
  if (!defers_row_loss(a)) row_choice_detail::refuse("kind", static_cast<int>(a.kind), "the launch is not deferred");
  return visit_one_pass_kernel(a, static_cast<Visit&&>(visit));
}

}  // namespace divcheck::cuda

// The plain types of the CUDA backend's device-level API (device_api.hpp): dtypes, row kinds,
// reductions, the launch arguments and the execution plan. No CUDA header here, so the kernel
// headers (*.cuh) and host code share them without pulling in the CUDA runtime.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/math/softmax.hpp"

namespace divcheck::cuda {

enum class FloatKind : std::uint8_t { f32, bf16, f16 };
inline std::size_t float_kind_size(FloatKind k) { return k == FloatKind::f32 ? 4 : 2; }

// The row kernel of a logit-level divergence (the registry rows map onto these).
enum class LogitKind : std::uint8_t { kl, jefferys, cross_entropy, jensen_shannon, hellinger, total_variation };

// docs/semantics.md "Reductions and the weight w".
enum class PositionReduction : std::uint8_t { sequence_mean, sequence_none, token_mean };

struct LogitArgs {
  LogitKind kind = LogitKind::kl;
  FloatKind dtype = FloatKind::f32;
  std::int64_t batch = 0, seq = 0, vocab = 0;  // B, T, V (each >= 1)
  const void* p_logits = nullptr;               // y: target / clean / teacher, (B, T, V)
  const void* q_logits = nullptr;               // x: input / noisy / student, (B, T, V)
  const std::uint8_t* valid = nullptr;          // (B, T) 0/1; nullptr: every position valid
  const std::uint8_t* support = nullptr;        // (B, T, V) 0/1; nullptr: full support
  PositionReduction reduction = PositionReduction::sequence_mean;
  double temperature = 1.0;                     // logits are divided by T; gradients carry 1/T
  bool prob_path = false;                       // log_target = False: probabilities exp(t) (1/S), logs of them
  bool capped = false;                          // masked_cross_entropy with max_loss
  double max_loss = 0.0;
  double scaling_factor = 1.0;
  // Upstream gradient (float32, device): 1 value, or B values for sequence_none. nullptr when
  // no gradient is wanted (then grad_p and grad_q must be nullptr).
  const float* grad_output = nullptr;
  void* grad_p = nullptr;                       // d/dy, dtype of the logits, (B, T, V); nullptr: not wanted
  void* grad_q = nullptr;                       // d/dx
  float* loss = nullptr;                        // 1 float, or B floats for sequence_none
  void* workspace = nullptr;                    // logit_workspace_bytes(B, T) bytes, 16-aligned
  // Tuning for tests and benchmarks (results are within tolerance for every choice; for a
  // fixed choice they are bitwise reproducible). 0: automatic; else 1, 2, 4, 8 or 16 CTAs
  // per row (a thread block cluster).
  int cluster_ctas = 0;
  int row_threads = 0;                          // 0: automatic; else 128, 256 or 512 threads per CTA
  // 0: automatic (2 for forward-only launches, else 1); 1: one cluster per row; 2: the
  // clusters the device holds at once loop over the rows, and a forward-only launch prefetches
  // each cluster's next row into shared memory while the current row's last exchange
  // completes (kernels/cuda/logit_rows_kernel.cuh).
  int row_grid = 0;
  bool allow_staging = true;                    // false: never keep rows in shared memory
  // A partly staged plan (256-thread CTAs, 16 per row: each CTA keeps the first K chunks of its
  // slices in shared memory, so that `partial_stage` CTAs share an SM, and reads the rest from
  // the L2 in every pass): 0 automatic, 1 never, 2 or 3 CTAs per SM (an error where the slices
  // would fit whole or no K fits). bench/RESULTS.md step 59.
  int partial_stage = 0;
  // The streamed kernels of KL and cross-entropy (stream_plan.hpp; forward only and with
  // gradients): 0 automatic (where the launch can take them), 1 never (the cluster kernel), 2
  // always (an error where it cannot).
  int stream_rows = 0;
  int stream_groups = 0;                        // groups per tile of the streamed kernels: 0 automatic, else 1..64
  int stream_registers = 0;                     // their register cap: 0 automatic (stream_plan.hpp), 64 or 80
  // The cluster kernel's placement of a cluster's CTAs (cudaLaunchAttributeClusterSchedulingPolicyPreference,
  // a preference the driver may ignore): 0 automatic (load balancing for a persistent grid, else the
  // driver's default: logit_launch.cu cluster_placement), 1 spread (one CTA of a cluster per SM), 2
  // load balancing (the hardware may put several on one SM). The kernels and results are the same.
  int cluster_policy = 0;
  // false: T = 2^k takes the reciprocal's kernels (plain_recip_t: at a power of two the division's
  // bits, the form before step 73) instead of plain_pow2_t (tests and the benchmark's A/B).
  bool pow2_kernels = true;
  // false: tame rows (math::tame_side) take the general forms too (the same values: a test
  // compares the two bitwise).
  bool allow_tame = true;
  // Device counters (diagnostics, for tests) or nullptr: kDiagnosticsCounters zero-initialised
  // 64-bit counters the kernel adds to (one pointer: a second kernel parameter field changed the
  // code of the whole row kernel, bench/RESULTS.md step 18).
  unsigned long long* counters = nullptr;
};

// The diagnostics counters of LogitArgs::counters.
inline constexpr int kTameRowsCounter = 0;        // positions that took the tame forms
// Rows whose slices a cluster requested ahead while finishing its previous row (the persistent
// grid's prefetch), counted once per cluster when the row starts and skips its own request.
inline constexpr int kPrefetchedRowsCounter = 1;
inline constexpr int kDiagnosticsCounters = 2;

// How a launch runs a row: `ctas` CTAs of `threads` threads (one thread block cluster) per row;
// `staged`: the row slices are kept in shared memory (one HBM read), else every pass reads
// global memory (slower fallback for rows too long for the cluster's shared memory).
struct LogitPlan {
  int ctas = 1;
  int threads = 512;                  // per CTA: 256 or 512
  bool staged = false;
  std::int64_t staged_columns = 0;    // staged: the columns of each slice in shared memory (slice, or K x 8)
  std::int64_t slice = 0;             // columns per CTA (a multiple of the 8-column chunk)
  std::size_t dynamic_smem_bytes = 0;
  int resident_clusters = 0;          // clusters the device holds at once (the persistent grid)
  bool persistent = false;            // LogitArgs::row_grid 2: resident clusters loop over the rows
  // The cluster kernel's placement preference (LogitArgs::cluster_policy's values): the forced
  // one, else load balancing for a persistent grid and the driver's default (0) otherwise
  // (logit_launch.cu cluster_placement).
  int cluster_policy = 0;
  // The streamed kernels (stream_plan.hpp): ctas = tiles per row, slice = columns per tile, no
  // cluster, no staging; with gradients, resident_clusters = the CTAs of the grid.
  bool streamed = false;
  int registers = 0;                  // streamed: the kernel's register cap (64 or 80)
};

// A partly staged plan (LogitArgs::partial_stage): staged, but only the first K chunks of each
// slice. It runs kernels of its own (logit_rows_body<..., kPartial>, whose chunk-index staged test
// would cost the whole staged kernels registers: bench/RESULTS.md step 60), compiled for float32
// logits only: 16-bit slices fit whole, two 256-thread CTAs of 16 per SM, up to V of about 424000
// (where a partly staged plan would start; beyond, they take one 512-thread CTA per SM).
inline bool partly_staged(const LogitPlan& p) { return p.staged && p.staged_columns < p.slice; }
inline constexpr FloatKind kPartialStageDtype = FloatKind::f32;
// tvd_prob (SPEC.md): p, q (N, V) probability rows.
enum class TvdReduction : std::uint8_t { none, sum, mean, batchmean };

struct TvdProbArgs {
  FloatKind dtype = FloatKind::f32;
  std::int64_t rows = 0, vocab = 0;       // N, V (each >= 1)
  const void* p = nullptr;
  const void* q = nullptr;
  const std::uint8_t* valid = nullptr;    // (N,) 0/1 (labels != ignore_index); nullptr: all valid
  TvdReduction reduction = TvdReduction::batchmean;
  // Upstream gradient (float32, device): 1 value, or (N, V) for none; nullptr: no gradient.
  const float* grad_output = nullptr;
  void* grad_p = nullptr;                 // dtype of p, (N, V); nullptr: not wanted
  float* loss = nullptr;                  // 1 float, or (N, V) floats for none
  void* workspace = nullptr;              // tvd_prob_workspace_bytes(N) bytes, 16-aligned
};

// The paths of a kernel. A launch takes one of the first five; the kernels with gradients carry
// only that one, so that no other path's code shares their register allocation (bench/RESULTS.md
// steps 36 and 37); the loss-only kernels carry all but plain_pow2_t, plain_recip_t and prob_unit_t (`all`:
// chosen per launch at run time; split by path they were 1-5% slower, step 37).
//   plain_unit_t:   no support mask, the log-softmax path, T = 1 (every registry row at its
//                   defaults but the temperature rows and the probability path's);
//   plain_pow2_t:   the same at T = 2^k, 2 <= T <= 2^62 (math::power_of_two_temperature,
//                   folds_into_one_pass_sums) for the policies of the temperature rows (KL,
//                   Jefferys: has_temperature_kernels): the division by T is a multiplication (the
//                   same bits), so these launches take the T = 1 structure (one exchange;
//                   forward-only KL deferred), step 38; the tame one-pass sums fold 2^-k out of
//                   the columns (step 73: the same bits unless the old form met a subnormal);
//                   other powers of two take plain_recip_t (1/T exact: the division's bits);
//   plain_recip_t:  the same at any other T != 1 whose reciprocal is a normal float (about
//                   2.9e-39 < T < 8.5e37), for the same policies: every shifted logit the
//                   product by 1/T rounded (math::ReciprocalTemperature: one rounding more than
//                   the division, and no slow path), so these launches take the T = 1 structure
//                   as well (one exchange; forward-only KL deferred), bench/RESULTS.md step 72;
//   plain_scaled_t: the same at any other T != 1 (every shifted logit an IEEE division): the
//                   other kinds (no registry row of theirs takes T) and reciprocals out of range;
//   prob_unit_t:    no support mask, the probability path (log_target = False), T = 1, for the
//                   policies of the rows with log_target (KL, Jefferys: has_probability_kernels;
//                   masked_jefferys_divergence's default): S with the range in one exchange,
//                   then the statistics pass, and the tame forms of the probability path
//                   (bench/RESULTS.md step 40); forward-only launches have a LossOnly kernel of
//                   their own, as plain_pow2_t;
//   general:        a support mask, or the probability path elsewhere, any T.
// The kernel tests T = 1 as prm.temperature == 1.0f: the float the launch passes.
enum class RowPaths : std::uint8_t { plain_unit_t, plain_pow2_t, plain_recip_t, plain_scaled_t, prob_unit_t, general, all };

// The form of the launch's temperature in an instantiation of the row kernel's passes
// (row_columns.cuh temperature_of): T = 1, T = 2^k with 2 <= T <= 2^62
// (plain_pow2_t), the product by the rounded reciprocal (plain_recip_t), or any T by division.
enum class TempForm : unsigned char { unit, power_of_two, reciprocal, any };

// The kinds with plain_pow2_t and plain_recip_t kernels: the policies of the two temperature rows
// (SPEC.md: only they take a temperature), so that the other kinds do not add kernels no registry
// row launches.
constexpr bool has_temperature_kernels(LogitKind k) { return k == LogitKind::kl || k == LogitKind::jefferys; }

// The kinds with prob_unit_t kernels: the policies of the rows that take log_target
// (masked_kl_divergence, masked_jefferys_divergence; SPEC.md).
constexpr bool has_probability_kernels(LogitKind k) { return k == LogitKind::kl || k == LogitKind::jefferys; }

inline RowPaths row_paths(const LogitArgs& a) {
  const float t = static_cast<float>(a.temperature);
  if (a.support == nullptr && a.prob_path && t == 1.0f && has_probability_kernels(a.kind)) return RowPaths::prob_unit_t;
  if (a.support != nullptr || a.prob_path) return RowPaths::general;
  if (t == 1.0f) return RowPaths::plain_unit_t;
  if (!has_temperature_kernels(a.kind)) return RowPaths::plain_scaled_t;
  math::PowerOfTwoTemperature pow2{};
  if (math::power_of_two_temperature(t, pow2) && math::folds_into_one_pass_sums(pow2) && a.pow2_kernels)
    return RowPaths::plain_pow2_t;
  return math::reciprocal_temperature_is_normal(t) ? RowPaths::plain_recip_t : RowPaths::plain_scaled_t;
}

// Forward-only launches of the one-exchange rows (KL and cross-entropy on the log-softmax path
// without a support mask, at T = 1, and KL at T != 1 on plain_pow2_t or plain_recip_t:
// one_exchange_row) need the row's statistics only for its loss: each CTA stores its message and goes on
// (reduce_one_exchange_to_memory), and combine_one_pass_rows finishes every row after the launch.
// No CTA waits for its cluster (the wait behind the exchange was 24% of KL bf16 forward's stall
// samples, bench/RESULTS.md step 28). Where this holds the launcher runs the deferred kernel
// instantiation (logit_rows_body's kDeferred: only the one-exchange path of the launch's
// temperature, plain_unit_t, plain_pow2_t or plain_recip_t) and then combine_one_pass_rows. The messages:
// LogitWorkspace::messages_of(row_loss), (B*T, C) records of 8 floats.
inline bool one_pass_row_launch(const LogitArgs& a);
inline bool defers_row_loss(const LogitArgs& a) {
  const bool forward_only = a.grad_p == nullptr && a.grad_q == nullptr;
  return forward_only && one_pass_row_launch(a);
}

// The one-exchange launches of the one-pass rows, with or without gradients: KL and
// cross-entropy on the log-softmax path without a support mask, at T = 1, and KL at T = 2^k or
// by the reciprocal (their row statistics are the one-pass sums and S, combined in ONE exchange). The streamed
// kernels can take them (stream_plan.hpp): forward only stream_rows_kernel.cuh (automatic), with
// gradients stream_grad_rows_kernel.cuh (only where stream_rows 2 forces it).
inline bool one_pass_row_launch(const LogitArgs& a) {
  const bool one_pass = a.kind == LogitKind::kl || a.kind == LogitKind::cross_entropy;
  const RowPaths paths = row_paths(a);
  return one_pass &&
         (paths == RowPaths::plain_unit_t || paths == RowPaths::plain_pow2_t || paths == RowPaths::plain_recip_t);
}

// Forward-only launches of the Jefferys rows without a support mask, on the log-softmax path at
// T = 1 or T = 2^k (jefferys_divergence; the temperature Jefferys row; masked_jefferys_divergence
// with log_target) or on the probability path at T = 1 (masked_jefferys_divergence's default,
// log_target = False; since 2026-12-07): the streamed kernel takes their loss by centred one-pass
// records (row_policies.cuh JefferysCentredPolicy, kernels/math/jefferys_centred.hpp) for the tame
// rows, and the cluster kernel (loss only, on the launch's own path) runs again for the rows that
// are not tame, which the combine marks (logit_launch.cu launch_centred_fallback). On a tame row
// the two paths are the same exact value, judged against the same reference and scale (SPEC.md:
// log_target selects the numerical path only); the probability path's p never underflows there
// (shifted logits >= -64), so the records need no fallback of its own (docs/semantics.md).
// Likewise forward-only squared_hellinger_distance without a support mask (T = 1; since
// 2026-12-07, row_policies.cuh HellingerCentredPolicy, kernels/math/hellinger_centred.hpp).
inline bool centred_forward_launch(const LogitArgs& a) {
  const bool forward_only = a.grad_p == nullptr && a.grad_q == nullptr;
  const RowPaths paths = row_paths(a);
  if (!forward_only) return false;
  if (a.kind == LogitKind::hellinger) return paths == RowPaths::plain_unit_t;
  return a.kind == LogitKind::jefferys &&
         (paths == RowPaths::plain_unit_t || paths == RowPaths::plain_pow2_t || paths == RowPaths::prob_unit_t);
}

// Which instantiation of the row kernel a launch runs (logit_row_kernels.hpp): a variant and
// the paths it carries.
//   full:      with gradients;
//   deferred:  forward-only KL and cross-entropy on the one-exchange path (defers_row_loss);
//   loss_only: every other forward-only launch: no gradient pass, and the statistics pass sums
//              only what the loss reads (Jefferys: 1 of 5 sums, Hellinger: 1 of 3, total
//              variation: 1 of 7; row_policies.cuh LossOnly), in the same order, so the loss is
//              bitwise the loss of a launch with gradients (bench/RESULTS.md steps 34 and 35).
enum class RowVariant : std::uint8_t { full, deferred, loss_only };

inline RowVariant row_variant(const LogitArgs& a) {
  if (defers_row_loss(a)) return RowVariant::deferred;
  const bool forward_only = a.grad_p == nullptr && a.grad_q == nullptr;
  return forward_only ? RowVariant::loss_only : RowVariant::full;
}

}  // namespace divcheck::cuda

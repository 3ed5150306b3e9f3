// The CUDA backend's kernels run by the host emulator (see emulated_backend.hpp). The launch
// sequences mirror kernels/cuda/logit_launch.cu and tvd_prob_kernels.cu step by step, with the
// shared helpers for everything that could drift (case_args, make_row_params, make_tvd_params,
// plan_math, the workspace layouts); host memory stands in for device memory.
// Compiled with fake_cuda/ first on the include path and fake_cuda/prelude.hpp force-included.
#include "tests/cuda/emulation/emulated_backend.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "kernels/cuda/case_args.hpp"
#include "kernels/cuda/logit_rows_kernel.cuh"
#include "kernels/cuda/plan_math.hpp"
#include "kernels/cuda/position_device.cuh"
#include "kernels/cuda/row_kernel_choice.cuh"
#include "kernels/cuda/stream_grad_rows_kernel.cuh"
#include "kernels/cuda/stream_plan.hpp"
#include "kernels/cuda/stream_rows_kernel.cuh"
#include "kernels/cuda/tvd_prob_rows.cuh"
#include "kernels/cuda/workspace.hpp"
#include "tests/cuda/emulation/emulator.hpp"

namespace divcheck::gputest {

namespace {

using namespace divcheck::cuda;

// H100/H200 opt-in shared memory per block (227 KB) minus the row kernel's static shared memory.
constexpr std::size_t kSharedBudget = 232448 - sizeof(RowKernelShared);

// 16-byte aligned scratch standing in for a device allocation.
class HostBuffer {
 public:
  explicit HostBuffer(std::size_t bytes) : words_(bytes / 16 + 1) {}
  unsigned char* data() { return reinterpret_cast<unsigned char*>(words_.data()); }

 private:
  std::vector<uint4> words_;
};

unsigned grid_for(std::int64_t items, std::int64_t per_block, std::int64_t cap) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(cap, (items + per_block - 1) / per_block)));
}

template <class Elem, class Policy, bool kDeferred, RowPaths kPaths, bool kPartial>
void emulate_rows(const RowKernelParams& prm, const LogitPlan& plan) {
  const auto ctas = static_cast<unsigned>(plan.ctas);
  std::vector<RowKernelShared> shared(ctas);
  std::vector<HostBuffer> dyn;
  for (unsigned r = 0; r < ctas; ++r) dyn.emplace_back(plan.dynamic_smem_bytes);
  // Two clusters (when there are two rows) so that the grid-stride row loop is exercised.
  const unsigned clusters = prm.rows >= 2 ? 2u : 1u;
  emu::launch(
      {clusters * ctas, static_cast<unsigned>(plan.threads), ctas},
      [&] {
        cg::cluster_group cl = cg::this_cluster();
        const unsigned r = cl.block_rank();
        logit_rows_body<Elem, Policy, kDeferred, kPaths, kPartial>(prm, cl, shared[r], dyn[r].data());
      },
      [&](unsigned r) { return static_cast<void*>(&shared[r]); }, sizeof(RowKernelShared));
}

// The launcher's choice (row_kernel_choice.cuh, the same table; a partly staged plan's kernels,
// float32 only, as logit_launch.cu select_kernels), emulated.
template <class Elem>
void emulate_rows_of(LogitKind k, const RowKernelParams& prm, const LogitPlan& plan, RowVariant variant,
                     RowPaths paths) {
  if (partly_staged(plan)) {
    if constexpr (std::is_same_v<Elem, float>) {
      visit_row_kernel(k, variant, paths, [&]<class Policy, bool kDeferred, RowPaths kPaths>() {
        emulate_rows<Elem, Policy, kDeferred, kPaths, true>(prm, plan);
      });
      return;
    } else {
      throw InvalidArgument("plan", "partly staged", "the partly staged kernels are float32's (emulator)");
    }
  }
  visit_row_kernel(k, variant, paths, [&]<class Policy, bool kDeferred, RowPaths kPaths>() {
    emulate_rows<Elem, Policy, kDeferred, kPaths, false>(prm, plan);
  });
}

// The streamed kernel (stream_rows_kernel.cuh) of a deferred launch; three CTAs (fewer when there
// are fewer tiles), so that the kernel's loop over the (row, tile) items is exercised.
template <class Elem>
void emulate_streamed_rows(const LogitArgs& a, const RowKernelParams& prm, const LogitPlan& plan) {
  const auto tiles = static_cast<unsigned>(plan.ctas);
  const unsigned stride = stream_stride(plan.ctas);
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(3, prm.rows * plan.ctas));
  std::vector<std::vector<float>> rec(grid, std::vector<float>(kRowThreadsMax / 32 * kRecordFloats));
  emu::launch({grid, static_cast<unsigned>(plan.threads), 1}, [&] {
    auto* r = reinterpret_cast<float (*)[kRecordFloats]>(rec[blockIdx.x].data());
    visit_combine_kernel(a, [&]<class Policy, TempForm kT>() { stream_rows_body<Elem, Policy, kT>(prm, tiles, stride, r); });
  });
}

// The streamed kernel with gradients (stream_grad_rows_kernel.cuh): three CTAs (fewer when there
// are fewer items), run concurrently as the cooperative launch's (one emulated cluster: a CTA's
// phase B waits for the other CTAs' phase A), each looping over its items; the arrivals zeroed
// first, as the launcher's memset. The test's plans keep 2 x 3 CTAs > tiles - 1
// (stream_grad_grid_ok), as the launcher requires.
template <class Elem>
void emulate_streamed_grad_rows(const LogitArgs& a, const RowKernelParams& prm, const LogitPlan& plan,
                                const LogitWorkspace& ws) {
  const auto tiles = static_cast<unsigned>(plan.ctas);
  const unsigned stride = stream_stride(plan.ctas);
  std::memset(ws.arrivals, 0, LogitWorkspace::arrival_bytes(a.batch, a.seq));
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>(3, prm.rows * plan.ctas));
  if (!stream_grad_grid_ok(grid, plan.ctas))
    throw Unavailable("emulated cuda backend: " + std::to_string(plan.ctas) + " tiles per row need more than 3 CTAs");
  std::vector<std::vector<float>> rec(grid, std::vector<float>(kRowThreadsMax / 32 * kRecordFloats));
  std::vector<StreamGradShared> sh(grid);
  emu::launch({grid, static_cast<unsigned>(plan.threads), grid}, [&] {
    auto* r = reinterpret_cast<float (*)[kRecordFloats]>(rec[blockIdx.x].data());
    visit_one_pass_kernel(a, [&]<class Policy, TempForm kT>() {
      stream_grad_rows_body<Elem, Policy, kT>(prm, tiles, stride, ws.arrivals, r, sh[blockIdx.x]);
    });
  });
}

}  // namespace

// launch_reduce_positions (position_kernels.cu), emulated launch by launch.
void emulate_reduce_positions(const std::uint8_t* valid, std::int64_t batch, std::int64_t seq,
                              cuda::PositionReduction reduction, const float* row_loss, float* seq_loss, float* loss) {
  using cuda::PositionReduction;
  if (reduction == PositionReduction::token_mean) {
    emu::launch({1, 32, 1}, [&] { mean_kernel(valid, batch * seq, row_loss, loss); });
    return;
  }
  float* s = reduction == PositionReduction::sequence_none ? loss : seq_loss;
  emu::launch({grid_for(batch, kCountThreads / 32, 65535), static_cast<unsigned>(kCountThreads), 1},
              [&] { sequence_losses_kernel(valid, batch, seq, row_loss, s); });
  if (reduction == PositionReduction::sequence_mean)
    emu::launch({1, 32, 1}, [&] { mean_kernel(nullptr, batch, seq_loss, loss); });
}

namespace {

void emulate_rows_dispatch(const LogitArgs& a, const RowKernelParams& prm, const LogitPlan& plan) {
  switch (a.dtype) {
    case FloatKind::f32: return emulate_rows_of<float>(a.kind, prm, plan, row_variant(a), row_paths(a));
    case FloatKind::bf16: return emulate_rows_of<__nv_bfloat16>(a.kind, prm, plan, row_variant(a), row_paths(a));
    case FloatKind::f16: return emulate_rows_of<__half>(a.kind, prm, plan, row_variant(a), row_paths(a));
  }
}

class EmulatedCudaBackend final : public Backend {
 public:
  explicit EmulatedCudaBackend(const CudaOptions& o) : options_(o) {}
  std::string_view name() const override { return "cuda-emulated"; }
  bool supports(DivergenceId id) const override { return cuda_supports(id); }
  Outputs run(const Case& c) const override {
    if (!cuda_supports(c.id))
      throw Unavailable("emulated cuda backend: " + std::string(name_of(c.id)) + " unsupported");
    return c.id == DivergenceId::tvd_prob ? run_tvd_prob(c) : run_logit(c);
  }

 private:
  Outputs run_logit(const Case& c) const;
  Outputs run_tvd_prob(const Case& c) const;
  CudaOptions options_;
};

Outputs EmulatedCudaBackend::run_logit(const Case& c) const {
  const LogitRoles roles = logit_roles(c);
  LogitArgs a = logit_args_of(c, options_);
  Outputs out;
  out.loss = Tensor(DType::f32, loss_shape(c));
  const bool want_p = c.wants(roles.p_name), want_q = c.wants(roles.q_name);
  if (want_p) out.grads.emplace(roles.p_name, Tensor(roles.p->dtype(), roles.p->shape()));
  if (want_q) out.grads.emplace(roles.q_name, Tensor(roles.q->dtype(), roles.q->shape()));
  const std::vector<std::uint8_t> valid = roles.mask ? nonzero_flags(*roles.mask) : std::vector<std::uint8_t>{};
  const std::vector<std::uint8_t> support = roles.support ? nonzero_flags(*roles.support) : std::vector<std::uint8_t>{};
  HostBuffer work(LogitWorkspace::bytes(a.batch, a.seq));

  a.p_logits = roles.p->data();
  a.q_logits = roles.q->data();
  a.valid = roles.mask ? valid.data() : nullptr;
  a.support = roles.support ? support.data() : nullptr;
  a.grad_output = (want_p || want_q) ? reinterpret_cast<const float*>(c.grad_output.data()) : nullptr;
  a.grad_p = want_p ? out.grads.at(roles.p_name).data() : nullptr;
  a.grad_q = want_q ? out.grads.at(roles.q_name).data() : nullptr;
  a.loss = reinterpret_cast<float*>(out.loss.data());
  a.workspace = work.data();

  // The cluster kernel's plan: the forced cluster size (1 when automatic: there is no device to ask).
  const auto cluster_plan = [&](const LogitArgs& a) {
    LogitPlan plan;
    plan.ctas = options_.cluster_ctas == 0 ? 1 : options_.cluster_ctas;
    plan.slice = slice_for(a.vocab, plan.ctas);
    plan.threads = options_.row_threads == 0 ? 512 : options_.row_threads;
    // The emulator's grid has two clusters looping over the rows (emulate_rows), so the
    // prefetch of forward-only launches runs unless one cluster per row is forced.
    plan.persistent = options_.row_grid != 1;
    const std::size_t elem = float_kind_size(a.dtype);
    const std::size_t need = staged_bytes(plan.slice, elem, a.support != nullptr);
    plan.staged = options_.allow_staging && need <= kSharedBudget;
    plan.staged_columns = plan.staged ? plan.slice : 0;
    if (options_.partial_stage >= 2) {
      // A partly staged plan as the launcher's (LogitArgs::partial_stage: float32 logits only),
      // with the emulator's budget shared by partial_stage CTAs; the caller picks a V whose
      // slices do not fit whole.
      if (a.dtype != kPartialStageDtype)
        throw InvalidArgument("partial_stage", std::to_string(options_.partial_stage),
                              "needs float32 logits: the partly staged kernels are float32's (emulator)");
      if (options_.row_threads == 0) plan.threads = 256;
      const std::size_t limit = kSharedBudget / static_cast<std::size_t>(options_.partial_stage);
      const std::int64_t kept = partial_stage_columns(limit, plan.threads, plan.slice, elem, a.support != nullptr);
      if (!options_.allow_staging || kept == 0 ||
          dynamic_bytes(plan.threads, true, plan.slice, elem, a.support != nullptr) <= limit)
        throw InvalidArgument("partial_stage", std::to_string(options_.partial_stage),
                              "needs slices that do not fit whole (emulator)");
      plan.staged = true;
      plan.staged_columns = kept;
    }
    plan.dynamic_smem_bytes =
        dynamic_bytes(plan.threads, plan.staged, plan.slice, elem, a.support != nullptr, plan.staged_columns);
    return plan;
  };
  // The plan: the streamed plan where the launch takes it (stream_plan.hpp, as the launcher),
  // else the cluster kernel's.
  LogitPlan plan = stream_plan(a);
  if (!plan.streamed) plan = cluster_plan(a);

  // The launch sequence of launch_logit_divergence.
  const LogitWorkspace ws = LogitWorkspace::carve(a.workspace, a.batch, a.seq);
  const bool wants = a.grad_output != nullptr;
  if (wants) {
    emu::launch({grid_for(a.batch, 1, 65535), static_cast<unsigned>(kCountThreads), 1},
                [&] { count_valid_kernel(a.valid, a.batch, a.seq, ws.counts); });
    emu::launch({1, static_cast<unsigned>(kStageThreads), 1}, [&] { total_kernel(ws.counts, a.batch, ws.total); });
    const double inv_t = 1.0 / a.temperature;
    emu::launch({grid_for(a.batch, kCountThreads, 0x7fffffff), static_cast<unsigned>(kCountThreads), 1}, [&] {
      weights_kernel(a.batch, a.reduction, a.grad_output, inv_t, ws.counts, ws.total, ws.coef);
    });
  }
  unsigned long long counters[kDiagnosticsCounters] = {};  // LogitArgs::counters
  if (options_.tame_rows_out || options_.prefetched_rows_out) a.counters = counters;
  const RowKernelParams prm = make_row_params(a, plan, ws.row_loss, wants ? ws.coef : nullptr);
  if (plan.streamed && wants) {
    switch (a.dtype) {
      case FloatKind::f32: emulate_streamed_grad_rows<float>(a, prm, plan, ws); break;
      case FloatKind::bf16: emulate_streamed_grad_rows<__nv_bfloat16>(a, prm, plan, ws); break;
      case FloatKind::f16: emulate_streamed_grad_rows<__half>(a, prm, plan, ws); break;
    }
  } else if (plan.streamed) {
    switch (a.dtype) {
      case FloatKind::f32: emulate_streamed_rows<float>(a, prm, plan); break;
      case FloatKind::bf16: emulate_streamed_rows<__nv_bfloat16>(a, prm, plan); break;
      case FloatKind::f16: emulate_streamed_rows<__half>(a, prm, plan); break;
    }
  } else {
    emulate_rows_dispatch(a, prm, plan);
  }
  // forward-only one-exchange rows and the centred forward: combine_one_pass_rows (8 rows per block)
  const bool centred = plan.streamed && centred_forward_launch(a);
  if (defers_row_loss(a) || centred) {
    const auto present = static_cast<unsigned>(plan.ctas);
    const unsigned ctas = plan.streamed ? stream_stride(plan.ctas) : present;
    emu::launch({grid_for(a.batch * a.seq, 8, 65535), 256u, 1}, [&] {
      visit_combine_kernel(
          a, [&]<class Policy, TempForm kT>() { combine_one_pass_rows_body<Policy, kT>(prm, ctas, present); });
    });
  }
  if (centred) {  // launch_centred_fallback: the cluster kernel for the rows the combine marked
    LogitArgs f = a;
    f.valid = LogitWorkspace::fallback_of(ws.row_loss, a.batch, a.seq);
    const LogitPlan fplan = cluster_plan(f);
    emulate_rows_dispatch(f, make_row_params(f, fplan, ws.row_loss, nullptr), fplan);
  }
  if (options_.tame_rows_out) *options_.tame_rows_out = static_cast<std::int64_t>(counters[kTameRowsCounter]);
  if (options_.prefetched_rows_out)
    *options_.prefetched_rows_out = static_cast<std::int64_t>(counters[kPrefetchedRowsCounter]);
  emulate_reduce_positions(a.valid, a.batch, a.seq, a.reduction, ws.row_loss, ws.seq_loss, a.loss);
  return out;
}

Outputs EmulatedCudaBackend::run_tvd_prob(const Case& c) const {
  TvdProbArgs a = tvd_args_of(c);
  const Tensor& p = *c.input("p");
  Outputs out;
  out.loss = Tensor(DType::f32, loss_shape(c));
  const bool want_p = c.wants("p");
  if (want_p) out.grads.emplace("p", Tensor(p.dtype(), p.shape()));
  const std::vector<std::uint8_t> valid = tvd_valid_flags(c);
  HostBuffer work(TvdWorkspace::bytes(a.rows));
  a.p = p.data();
  a.q = c.input("q")->data();
  a.valid = valid.empty() ? nullptr : valid.data();
  a.grad_output = want_p ? reinterpret_cast<const float*>(c.grad_output.data()) : nullptr;
  a.grad_p = want_p ? out.grads.at("p").data() : nullptr;
  a.loss = reinterpret_cast<float*>(out.loss.data());
  a.workspace = work.data();

  // The launch sequence of launch_tvd_prob.
  const TvdWorkspace ws = TvdWorkspace::carve(a.workspace, a.rows);
  emu::launch({1, static_cast<unsigned>(kStageThreads), 1}, [&] {
    tvd_scale_kernel(a.valid, a.rows, a.vocab, a.reduction, a.grad_output, ws.total, ws.scale, ws.half_scale_g);
  });
  const TvdRowParams prm = make_tvd_params(a, ws);
  const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>(a.rows, 3));  // exercises the row stride
  emu::launch({grid, static_cast<unsigned>(kTvdThreads), 1}, [&] {
    switch (a.dtype) {
      case FloatKind::f32: return tvd_prob_rows_kernel<float>(prm);
      case FloatKind::bf16: return tvd_prob_rows_kernel<__nv_bfloat16>(prm);
      case FloatKind::f16: return tvd_prob_rows_kernel<__half>(prm);
    }
  });
  if (a.reduction != TvdReduction::none)
    emu::launch({1, 32, 1}, [&] { tvd_total_kernel(a.valid, a.rows, ws.row_value, ws.scale, a.loss); });
  return out;
}

}  // namespace

std::unique_ptr<Backend> make_emulated_cuda_backend(const cuda::CudaOptions& options) {
  return std::make_unique<EmulatedCudaBackend>(options);
}

}  // namespace divcheck::gputest

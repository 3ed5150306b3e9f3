// From a validated host Case to device-API arguments (see case_args.hpp).
#include "kernels/cuda/case_args.hpp"

#include "core/errors.hpp"

namespace divcheck::cuda {

bool cuda_supports(DivergenceId id) {
  return id != DivergenceId::fused_linear_masked_kl_divergence && id != DivergenceId::masked_unbiased_dcor;
}

LogitRoles logit_roles(const Case& c) {
  LogitRoles r;
  for (const auto& role : info(c.id).roles) {
    const std::string name(role.name);
    if (role.kind == RoleKind::logits && role.side == Side::p) r.p = c.input(name), r.p_name = name;
    if (role.kind == RoleKind::logits && role.side == Side::q) r.q = c.input(name), r.q_name = name;
    if (role.kind == RoleKind::position_mask) r.mask = c.input(name);
    if (role.kind == RoleKind::support_mask) r.support = c.input(name);
  }
  return r;
}

LogitKind logit_kind_of(DivergenceId id) {
  switch (id) {
    case DivergenceId::masked_kl_divergence:
    case DivergenceId::temperature_scaled_masked_kl_divergence: return LogitKind::kl;
    case DivergenceId::masked_jefferys_divergence:
    case DivergenceId::jefferys_divergence:
    case DivergenceId::temperature_scaled_masked_jefferys_divergence: return LogitKind::jefferys;
    case DivergenceId::masked_cross_entropy: return LogitKind::cross_entropy;
    case DivergenceId::jensen_shannon_divergence: return LogitKind::jensen_shannon;
    case DivergenceId::squared_hellinger_distance: return LogitKind::hellinger;
    case DivergenceId::total_variation: return LogitKind::total_variation;
    default: break;
  }
  throw Unavailable("cuda backend: " + std::string(name_of(id)) + " is not a logit row of the cuda backend");
}

namespace {

FloatKind float_kind(const Tensor& t, const std::string& role) {
  switch (t.dtype()) {
    case DType::f32: return FloatKind::f32;
    case DType::bf16: return FloatKind::bf16;
    case DType::f16: return FloatKind::f16;
    default: throw InvalidArgument(role + ".dtype", std::string(short_name(t.dtype())), "must be f32, bf16 or f16");
  }
}

std::string effective_reduction(const Case& c) {
  return c.params.reduction.empty() ? std::string(info(c.id).default_reduction) : c.params.reduction;
}

PositionReduction position_reduction(const std::string& r) {
  if (r == "mean" || r == "sequence_mean") return PositionReduction::sequence_mean;
  if (r == "none") return PositionReduction::sequence_none;
  if (r == "token_mean") return PositionReduction::token_mean;
  throw InvalidArgument("reduction", "\"" + r + "\"", "not a position reduction of the cuda backend");
}

TvdReduction tvd_reduction(const std::string& r) {
  if (r == "none") return TvdReduction::none;
  if (r == "sum") return TvdReduction::sum;
  if (r == "mean") return TvdReduction::mean;
  if (r == "batchmean") return TvdReduction::batchmean;
  throw InvalidArgument("reduction", "\"" + r + "\"", "not a reduction of tvd_prob");
}

}  // namespace

LogitArgs logit_args_of(const Case& c, const CudaOptions& o) {
  const DivergenceInfo& d = info(c.id);
  const LogitRoles roles = logit_roles(c);
  const Tensor& y = *roles.p;
  LogitArgs a;
  a.kind = logit_kind_of(c.id);
  a.dtype = float_kind(y, roles.p_name);
  a.batch = y.dim(0);
  a.seq = y.dim(1);
  a.vocab = y.dim(2);
  a.reduction = position_reduction(effective_reduction(c));
  a.temperature = d.accepts(ParamKind::temperature) ? c.params.temperature : 1.0;
  a.prob_path = d.accepts(ParamKind::log_target) && !c.params.log_target;
  if (d.accepts(ParamKind::max_loss) && c.params.max_loss) {
    a.capped = true;
    a.max_loss = *c.params.max_loss;
    a.scaling_factor = c.params.scaling_factor;
  }
  a.cluster_ctas = o.cluster_ctas;
  a.allow_staging = o.allow_staging;
  a.allow_tame = o.allow_tame;
  a.row_threads = o.row_threads;
  a.row_grid = o.row_grid;
  a.stream_rows = o.stream_rows;
  a.stream_groups = o.stream_groups;
  a.stream_registers = o.stream_registers;
  a.cluster_policy = o.cluster_policy;
  a.partial_stage = o.partial_stage;
  a.pow2_kernels = o.pow2_kernels;
  return a;
}


LogitArgs logit_args_defaults(DivergenceId id, FloatKind dt, std::int64_t batch, std::int64_t seq, std::int64_t vocab) {
  const DivergenceInfo& d = info(id);
  LogitArgs a;
  a.kind = logit_kind_of(id);
  a.dtype = dt;
  a.batch = batch;
  a.seq = seq;
  a.vocab = vocab;
  a.reduction = position_reduction(std::string(d.default_reduction));
  a.prob_path = d.accepts(ParamKind::log_target) && !d.default_log_target;
  return a;
}

TvdProbArgs tvd_args_of(const Case& c) {
  const Tensor& p = *c.input("p");
  TvdProbArgs a;
  a.dtype = float_kind(p, "p");
  a.rows = p.dim(0);
  a.vocab = p.dim(1);
  a.reduction = tvd_reduction(effective_reduction(c));
  return a;
}

std::vector<std::uint8_t> nonzero_flags(const Tensor& mask) {
  std::vector<std::uint8_t> f(static_cast<std::size_t>(mask.numel()));
  for (std::int64_t i = 0; i < mask.numel(); ++i) f[static_cast<std::size_t>(i)] = mask.nonzero(i) ? 1 : 0;
  return f;
}

std::vector<std::uint8_t> tvd_valid_flags(const Case& c) {
  const Tensor* labels = c.input("labels");
  std::vector<std::uint8_t> f;
  if (!labels) return f;
  f.resize(static_cast<std::size_t>(labels->numel()));
  for (std::int64_t i = 0; i < labels->numel(); ++i)
    f[static_cast<std::size_t>(i)] = labels->get(i) != static_cast<double>(c.params.ignore_index) ? 1 : 0;
  return f;
}

}  // namespace divcheck::cuda

#include "core/case.hpp"

#include <cmath>
#include <map>
#include <sstream>

#include "core/errors.hpp"

namespace divcheck {

namespace {

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

bool dtype_allowed(RoleKind k, DType dt) {
  switch (k) {
    case RoleKind::logits:
    case RoleKind::probabilities:
    case RoleKind::hidden:
    case RoleKind::weight:
    case RoleKind::samples:
      return dt == DType::f32 || dt == DType::bf16 || dt == DType::f16;
    case RoleKind::position_mask:
    case RoleKind::support_mask:
      return is_integer_or_bool(dt);
    case RoleKind::labels:
      return is_integer_or_bool(dt) && dt != DType::boolean;
  }
  return false;
}

void require_finite_positive(const std::string& name, double v) {
  if (!std::isfinite(v) || !(v > 0.0)) throw InvalidArgument(name, num(v), "must be finite and > 0");
}

}  // namespace

void validate_case(const Case& c) {
  const DivergenceInfo& d = info(c.id);
  std::string where = std::string(d.name) + ": ";

  // Tensors: every given tensor must be a role of this divergence.
  for (const auto& [name, t] : c.inputs) {
    (void)t;
    if (!d.role(name)) throw InvalidArgument(where + name, "<tensor>", "is not an argument of this divergence");
  }
  std::map<std::string, std::int64_t> dims;
  std::optional<DType> float_dtype;
  std::string float_dtype_role;
  for (const auto& role : d.roles) {
    const Tensor* t = c.input(std::string(role.name));
    std::string arg = where + std::string(role.name);
    if (!t) {
      if (!role.optional) throw InvalidArgument(arg, "None", "is required");
      continue;
    }
    if (!dtype_allowed(role.kind, t->dtype()))
      throw InvalidArgument(arg + ".dtype", std::string(short_name(t->dtype())), "dtype not allowed for this argument");
    std::size_t rank = 0;
    for (auto s : role.dims) rank += !s.empty();
    if (t->rank() != rank)
      throw InvalidArgument(arg + ".shape", shape_string(t->shape()), "expected rank " + std::to_string(rank));
    for (std::size_t i = 0; i < rank; ++i) {
      std::string sym(role.dims[i]);
      std::int64_t v = t->dim(i);
      if (v < 1) throw InvalidArgument(arg + ".shape", shape_string(t->shape()), "dimension " + sym + " must be >= 1");
      auto [it, inserted] = dims.emplace(sym, v);
      if (!inserted && it->second != v)
        throw InvalidArgument(arg + ".shape", shape_string(t->shape()),
                              "dimension " + sym + " = " + std::to_string(v) + " disagrees with " + std::to_string(it->second) +
                                  " of an earlier argument");
    }
    bool is_float_role = role.kind == RoleKind::logits || role.kind == RoleKind::probabilities ||
                         role.kind == RoleKind::hidden || role.kind == RoleKind::weight || role.kind == RoleKind::samples;
    if (is_float_role) {
      if (float_dtype && *float_dtype != t->dtype())
        throw InvalidArgument(arg + ".dtype", std::string(short_name(t->dtype())),
                              "must match " + float_dtype_role + ".dtype = " + std::string(short_name(*float_dtype)));
      float_dtype = t->dtype();
      float_dtype_role = std::string(role.name);
    }
  }

  // Parameters: domains of SPEC.md.
  const Params& p = c.params;
  if (d.accepts(ParamKind::temperature)) require_finite_positive(where + "temperature", p.temperature);
  if (d.accepts(ParamKind::max_loss) && p.max_loss) require_finite_positive(where + "max_loss", *p.max_loss);
  if (d.accepts(ParamKind::scaling_factor)) require_finite_positive(where + "scaling_factor", p.scaling_factor);
  if (d.accepts(ParamKind::jsd_beta) && !(p.jsd_beta == 0.0 || p.jsd_beta == 1.0))
    throw InvalidArgument(where + "jsd_beta", num(p.jsd_beta), "must be 0.0 (forward KL) or 1.0 (reverse KL)");
  if (d.accepts(ParamKind::chunk_size) && p.chunk_size < 1)
    throw InvalidArgument(where + "chunk_size", std::to_string(p.chunk_size), "must be >= 1");
  if (d.accepts(ParamKind::safety_factor) && (!std::isfinite(p.safety_factor) || p.safety_factor < 0.0))
    throw InvalidArgument(where + "safety_factor", num(p.safety_factor), "must be finite and >= 0");
  if (d.accepts(ParamKind::reduction)) {
    bool ok = false;
    std::string allowed;
    for (auto r : d.reductions) {
      ok |= (p.reduction == r);
      allowed += (allowed.empty() ? "" : ", ") + std::string(r);
    }
    if (!ok) throw InvalidArgument(where + "reduction", "\"" + p.reduction + "\"", "must be one of: " + allowed);
  } else if (!p.reduction.empty() && p.reduction != d.default_reduction) {
    throw InvalidArgument(where + "reduction", "\"" + p.reduction + "\"", "this divergence has no reduction parameter");
  }
  if (p.ignore_index != -100)
    throw InvalidArgument(where + "ignore_index", std::to_string(p.ignore_index), "only -100 is supported");

  // Gradients requested: each must be a differentiable role that is present, at most once.
  for (std::size_t i = 0; i < c.wants_grad.size(); ++i) {
    const std::string& g = c.wants_grad[i];
    const RoleSpec* r = d.role(g);
    if (!r || !r->differentiable)
      throw InvalidArgument(where + "wants_grad", g, "no gradient flows to this argument");
    for (std::size_t j = 0; j < i; ++j)
      if (c.wants_grad[j] == g) throw InvalidArgument(where + "wants_grad", g, "listed twice");
  }

  // Upstream gradient: float32 of the loss's shape (only needed when a gradient is wanted).
  if (!c.wants_grad.empty()) {
    Shape ls = loss_shape(c);
    if (c.grad_output.dtype() != DType::f32)
      throw InvalidArgument(where + "grad_output.dtype", std::string(short_name(c.grad_output.dtype())), "must be f32");
    if (c.grad_output.shape() != ls)
      throw InvalidArgument(where + "grad_output.shape", shape_string(c.grad_output.shape()),
                            "must equal the loss shape " + shape_string(ls));
  }
}

Shape loss_shape(const Case& c) {
  const DivergenceInfo& d = info(c.id);
  std::string red = c.params.reduction.empty() ? std::string(d.default_reduction) : c.params.reduction;
  if (red != "none") return {};
  if (c.id == DivergenceId::tvd_prob) return c.input("p")->shape();
  // Logit divergences with reduction="none": the per-sequence vector (B,).
  return {c.input(std::string(d.roles.front().name))->dim(0)};
}

}  // namespace divcheck

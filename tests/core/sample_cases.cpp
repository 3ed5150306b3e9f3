// Builds sample cases from registry rows (see sample_cases.hpp).
#include "tests/core/sample_cases.hpp"

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "core/registry.hpp"

namespace divcheck::testing {

namespace {

// Uniform double in [0, 1) with 53 random bits (std::mt19937_64 output is fully specified, so the
// cases are the same on every platform).
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::int64_t dim_of(std::string_view sym, const SampleOptions& o) {
  if (sym == "B") return o.B;
  if (sym == "T") return o.T;
  if (sym == "V") return o.V;
  if (sym == "N") return o.N;
  if (sym == "H") return o.H;
  if (sym == "D1") return o.D1;
  if (sym == "D2") return o.D2;
  return 1;
}

Tensor role_tensor(const DivergenceInfo& d, const RoleSpec& r, std::mt19937_64& rng, const SampleOptions& o) {
  Shape shape;
  for (auto sym : r.dims)
    if (!sym.empty()) shape.push_back(dim_of(sym, o));
  switch (r.kind) {
    case RoleKind::position_mask:
    case RoleKind::support_mask: {
      Tensor t(o.mask_dtype, shape);
      for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, (rng() % 4) != 0 ? 1.0 : 0.0);
      return t;
    }
    case RoleKind::labels: {
      Tensor t(o.label_dtype, shape);
      const std::int64_t v = o.V;
      const bool can_ignore = o.label_dtype != DType::u8;
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.set(i, can_ignore && rng() % 4 == 0 ? -100.0 : static_cast<double>(rng() % static_cast<std::uint64_t>(v)));
      return t;
    }
    case RoleKind::probabilities: {
      Tensor t(o.float_dtype, shape);
      const std::int64_t rows = shape[0], cols = shape[1];
      for (std::int64_t n = 0; n < rows; ++n) {
        std::vector<double> w(static_cast<std::size_t>(cols));
        double sum = 0;
        for (auto& x : w) sum += (x = unit(rng));
        for (std::int64_t v = 0; v < cols; ++v) t.set(n * cols + v, w[static_cast<std::size_t>(v)] / sum);
      }
      return t;
    }
    default: {
      (void)d;
      Tensor t(o.float_dtype, shape);
      for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, 8.0 * unit(rng) - 4.0);
      return t;
    }
  }
}

void draw_params(const DivergenceInfo& d, Params& p, std::mt19937_64& rng) {
  for (ParamKind k : d.params) {
    switch (k) {
      case ParamKind::log_target: p.log_target = rng() % 2; break;
      case ParamKind::max_loss:
        if (rng() % 3 == 0) p.max_loss.reset();
        else p.max_loss = std::exp(6.0 * unit(rng) - 3.0);
        break;
      case ParamKind::scaling_factor: p.scaling_factor = std::exp(6.0 * unit(rng) - 3.0); break;
      case ParamKind::temperature: p.temperature = std::exp(8.0 * unit(rng) - 4.0); break;
      case ParamKind::reduction: p.reduction = std::string(d.reductions[rng() % d.reductions.size()]); break;
      case ParamKind::jsd_beta: p.jsd_beta = static_cast<double>(rng() % 2); break;
      case ParamKind::chunk_size: p.chunk_size = 1 + static_cast<std::int64_t>(rng() % 5000); break;
      case ParamKind::safety_factor: p.safety_factor = rng() % 5 == 0 ? 0.0 : 1000.0 * unit(rng); break;
    }
  }
}

}  // namespace

Case sample_case(DivergenceId id, std::uint64_t seed, const SampleOptions& opt) {
  const DivergenceInfo& d = info(id);
  std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ull * (static_cast<std::uint64_t>(id) + 1)));
  Case c;
  c.id = id;
  c.params.log_target = d.default_log_target;
  if (!d.reductions.empty()) c.params.reduction = std::string(d.default_reduction);
  if (opt.random_params) draw_params(d, c.params, rng);
  for (const auto& r : d.roles) {
    if (r.optional && !opt.with_optional) continue;
    c.inputs.emplace(std::string(r.name), role_tensor(d, r, rng, opt));
    if (opt.all_grads && r.differentiable) c.wants_grad.emplace_back(r.name);
  }
  c.grad_output = Tensor(DType::f32, loss_shape(c));
  for (std::int64_t i = 0; i < c.grad_output.numel(); ++i) c.grad_output.set(i, 2.0 * unit(rng) - 0.5);
  c.provenance.family = "sample";
  c.provenance.seed = seed;
  c.provenance.note = "built by tests/core/sample_cases.cpp \xc3\xbc\xe2\x9c\x93";  // "ü✓": UTF-8 survives
  return c;
}

}  // namespace divcheck::testing

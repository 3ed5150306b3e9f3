// Test helpers for the reference tests: build small cases by hand (exact tensors from value
// lists) and deterministic random cases of every registry row.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/case.hpp"

namespace divcheck::testing_ref {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline Tensor tensor_of(DType dt, Shape shape, const std::vector<double>& values) {
  Tensor t(dt, std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, values.at(static_cast<std::size_t>(i)));
  return t;
}

inline Tensor filled(DType dt, Shape shape, double v) {
  Tensor t(dt, std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, v);
  return t;
}

// A case with every differentiable role wanted and grad_output of the loss shape filled with g.
inline void want_all_grads(Case& c, double g = 1.0) {
  c.wants_grad.clear();
  for (const RoleSpec& r : info(c.id).roles)
    if (r.differentiable && c.input(std::string(r.name))) c.wants_grad.push_back(std::string(r.name));
  c.grad_output = filled(DType::f32, loss_shape(c), g);
}

// Logit-level case (B, T, V) from value lists; p side = target/clean/teacher.
inline Case logit_case(DivergenceId id, std::int64_t B, std::int64_t T, std::int64_t V, const std::vector<double>& p_side,
                       const std::vector<double>& q_side, DType dt = DType::f32) {
  Case c;
  c.id = id;
  const DivergenceInfo& d = info(id);
  for (const RoleSpec& r : d.roles) {
    const std::string name(r.name);
    if (r.kind == RoleKind::logits) c.inputs[name] = tensor_of(dt, {B, T, V}, r.side == Side::p ? p_side : q_side);
    if (r.kind == RoleKind::position_mask && !r.optional) c.inputs[name] = filled(DType::i64, {B, T}, 1.0);
  }
  if (!d.reductions.empty()) c.params.reduction = std::string(d.default_reduction);
  c.params.log_target = d.default_log_target;
  want_all_grads(c);
  return c;
}

inline const char* mask_role_of(DivergenceId id) {
  for (const RoleSpec& r : info(id).roles)
    if (r.kind == RoleKind::position_mask) return r.name.data();
  return nullptr;
}

struct RandomOptions {
  std::int64_t B = 2, T = 3, V = 6, H = 3, D1 = 2, D2 = 3, N = 4;
  double logit_scale = 2.0;
  bool masked_positions = true;   // some positions masked (with NaN garbage when garbage = true)
  bool garbage = true;
  bool support_mask = true;       // support rows get a random support mask
  DType dtype = DType::f32;
};

// A deterministic random case of any row, with every gradient wanted and a random upstream g.
inline Case random_case(DivergenceId id, std::uint64_t seed, const RandomOptions& o = {}) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(id));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  const DivergenceInfo& d = info(id);
  Case c;
  c.id = id;
  if (!d.reductions.empty()) c.params.reduction = std::string(d.default_reduction);
  c.params.log_target = d.default_log_target;
  const std::int64_t B = o.B, T = o.T;
  // Position mask: position (b, 1) of every b > 0 masked, at least one valid per batch b = 0.
  std::vector<double> mask(static_cast<std::size_t>(B * T), 1.0);
  if (o.masked_positions)
    for (std::int64_t b = 0; b < B; ++b)
      if (T > 1) mask[b * T + (b % T == 0 ? 1 : 0)] = 0.0;
  auto masked = [&](std::int64_t pos) { return mask[static_cast<std::size_t>(pos)] == 0.0; };
  auto rand_tensor = [&](Shape shape, double scale, std::int64_t inner) {
    Tensor t(o.dtype, shape);
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const std::int64_t pos = inner > 0 ? i / inner : -1;
      double v = scale * normal(rng);
      if (o.garbage && pos >= 0 && pos < B * T && masked(pos)) v = kNaN;
      t.set(i, v);
    }
    return t;
  };
  for (const RoleSpec& r : d.roles) {
    const std::string name(r.name);
    switch (r.kind) {
      case RoleKind::logits: c.inputs[name] = rand_tensor({B, T, o.V}, o.logit_scale, o.V); break;
      case RoleKind::hidden: c.inputs[name] = rand_tensor({B, T, o.H}, 1.0, o.H); break;
      case RoleKind::weight: c.inputs[name] = rand_tensor({o.V, o.H}, 0.7, 0); break;
      case RoleKind::samples: {
        const std::int64_t D = name == "samples_1" ? o.D1 : o.D2;
        c.inputs[name] = rand_tensor({B, T, D}, 1.0, D);
        break;
      }
      case RoleKind::position_mask: c.inputs[name] = tensor_of(DType::i32, {B, T}, mask); break;
      case RoleKind::support_mask:
        if (o.support_mask) {
          Tensor s(DType::u8, {B, T, o.V});
          for (std::int64_t i = 0; i < s.numel(); ++i) s.set(i, unif(rng) < 0.75 ? 1.0 : 0.0);
          c.inputs[name] = s;
        }
        break;
      case RoleKind::probabilities: {
        Tensor t(o.dtype, {o.N, o.V});
        for (std::int64_t n = 0; n < o.N; ++n) {
          std::vector<double> e(static_cast<std::size_t>(o.V));
          double s = 0.0;
          for (auto& x : e) s += (x = std::exp(normal(rng)));
          for (std::int64_t v = 0; v < o.V; ++v) t.set(n * o.V + v, e[v] / s);
        }
        c.inputs[name] = t;
        break;
      }
      case RoleKind::labels: {
        Tensor t(DType::i64, {o.N});
        for (std::int64_t n = 0; n < o.N; ++n) t.set(n, n == 1 ? -100.0 : static_cast<double>(n % 5));
        c.inputs[name] = t;
        break;
      }
    }
  }
  // dcor: make samples_2 depend on samples_1 so that the correlation is inside (0, 1).
  if (id == DivergenceId::masked_unbiased_dcor) {
    Tensor& y = c.inputs["samples_2"];
    const Tensor& x = c.inputs["samples_1"];
    for (std::int64_t pos = 0; pos < B * T; ++pos) {
      if (masked(pos)) continue;
      for (std::int64_t k = 0; k < o.D2; ++k)
        y.set(pos * o.D2 + k, x.get(pos * o.D1 + k % o.D1) * (1.0 + 0.5 * k) + 0.3 * normal(rng));
    }
  }
  c.wants_grad.clear();
  for (const RoleSpec& r : d.roles)
    if (r.differentiable && c.input(std::string(r.name))) c.wants_grad.push_back(std::string(r.name));
  Tensor g(DType::f32, loss_shape(c));
  for (std::int64_t i = 0; i < g.numel(); ++i) g.set(i, 0.5 + unif(rng));
  c.grad_output = g;
  return c;
}

// Change the reduction and rebuild grad_output for the new loss shape (random values kept simple).
inline void set_reduction(Case& c, const std::string& red, double g = 0.75) {
  c.params.reduction = red;
  Tensor t(DType::f32, loss_shape(c));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, g + 0.125 * static_cast<double>(i % 4));
  c.grad_output = t;
}

}  // namespace divcheck::testing_ref

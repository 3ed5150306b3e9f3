// Case builders for the CPU backend's tests (see test_cases.hpp).
#include "tests/cpu/test_cases.hpp"

#include <cmath>
#include <random>

namespace divcheck::testing {

Tensor make_tensor(DType dt, const Shape& s, const std::vector<double>& values) {
  Tensor t(dt, s);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, values.at(static_cast<std::size_t>(i)));
  return t;
}

Tensor make_mask(const Shape& s, const std::vector<int>& values) {
  Tensor t(DType::u8, s);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, values.at(static_cast<std::size_t>(i)) != 0 ? 1.0 : 0.0);
  return t;
}

Tensor ones_mask(const Shape& s) { return make_mask(s, std::vector<int>(static_cast<std::size_t>(shape_numel(s)), 1)); }

std::vector<double> randn(std::size_t n, std::uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = scale * nd(rng);
  return v;
}

std::vector<double> softmax_rows(const std::vector<double>& z, std::int64_t rows, std::int64_t cols) {
  std::vector<double> p(z.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY;
    for (std::int64_t v = 0; v < cols; ++v) m = std::max(m, z[r * cols + v]);
    double s = 0;
    for (std::int64_t v = 0; v < cols; ++v) s += std::exp(z[r * cols + v] - m);
    for (std::int64_t v = 0; v < cols; ++v) p[r * cols + v] = std::exp(z[r * cols + v] - m) / s;
  }
  return p;
}

namespace {
std::string role_with(DivergenceId id, RoleKind kind, Side side) {
  for (const auto& r : info(id).roles)
    if (r.kind == kind && (side == Side::none || r.side == side)) return std::string(r.name);
  return "";
}
}  // namespace

std::string p_role(DivergenceId id) { return role_with(id, RoleKind::logits, Side::p); }
std::string q_role(DivergenceId id) { return role_with(id, RoleKind::logits, Side::q); }
std::string mask_role(DivergenceId id) { return role_with(id, RoleKind::position_mask, Side::none); }
bool is_logit_row(DivergenceId id) { return !p_role(id).empty(); }

std::vector<DivergenceId> all_rows() {
  std::vector<DivergenceId> v;
  for (const auto& d : registry()) v.push_back(d.id);
  return v;
}
std::vector<DivergenceId> logit_rows() {
  std::vector<DivergenceId> v;
  for (auto id : all_rows())
    if (is_logit_row(id)) v.push_back(id);
  return v;
}

Case logit_case(DivergenceId id, std::int64_t B, std::int64_t T, std::int64_t V, DType dt,
                const std::vector<double>& p_side, const std::vector<double>& q_side) {
  Case c;
  c.id = id;
  c.params.log_target = info(id).default_log_target;
  if (!info(id).reductions.empty()) c.params.reduction = std::string(info(id).default_reduction);
  c.inputs[p_role(id)] = make_tensor(dt, {B, T, V}, p_side);
  c.inputs[q_role(id)] = make_tensor(dt, {B, T, V}, q_side);
  const std::string m = mask_role(id);
  const RoleSpec* mr = info(id).role(m);
  if (mr && !mr->optional) c.inputs[m] = ones_mask({B, T});
  return c;
}

void want_all_grads(Case& c, double g) {
  c.wants_grad.clear();
  for (const auto& r : info(c.id).roles)
    if (r.differentiable && c.input(std::string(r.name))) c.wants_grad.emplace_back(r.name);
  Shape ls = loss_shape(c);
  c.grad_output = Tensor(DType::f32, ls);
  for (std::int64_t i = 0; i < c.grad_output.numel(); ++i) c.grad_output.set(i, g);
}

void vary_logit_options(Case& c, std::int64_t B, std::int64_t T, std::int64_t V, std::uint64_t seed,
                        std::mt19937_64& rng) {
  const DivergenceId id = c.id;
  if (info(id).role("support_mask")) {
    std::vector<int> s(static_cast<std::size_t>(B * T * V));
    for (auto& x : s) x = (rng() % 4) != 0;
    c.inputs["support_mask"] = make_mask({B, T, V}, s);
  }
  for (auto k : info(id).params)
    if (k == ParamKind::temperature) c.params.temperature = 0.7;
  if (id == DivergenceId::masked_cross_entropy && seed % 2 == 1) {
    c.params.max_loss = 1.5;
    c.params.scaling_factor = 0.8;
  }
  if (info(id).props.has_log_target) c.params.log_target = seed % 2 == 0;
  if (info(id).props.has_reduction_none) c.params.reduction = seed % 3 == 0 ? "none" : "mean";
}

Case random_case(DivergenceId id, DType dt, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + 17);
  Case c;
  c.id = id;
  if (is_logit_row(id)) {
    const std::int64_t B = 2, T = 3, V = 5 + static_cast<std::int64_t>(seed % 4);
    const auto n = static_cast<std::size_t>(B * T * V);
    c = logit_case(id, B, T, V, dt, randn(n, seed, 2.0), randn(n, seed + 1000, 2.0));
    const std::string m = mask_role(id);
    c.inputs[m] = make_mask({B, T}, {1, 0, 1, 1, 1, 0});
    vary_logit_options(c, B, T, V, seed, rng);
    return c;
  }
  switch (id) {
    case DivergenceId::fused_linear_masked_kl_divergence: {
      const std::int64_t B = 2, T = 3, H = 4, V = 6;
      c.inputs["student_hidden"] = make_tensor(dt, {B, T, H}, randn(B * T * H, seed, 0.8));
      c.inputs["teacher_hidden"] = make_tensor(dt, {B, T, H}, randn(B * T * H, seed + 1, 0.8));
      c.inputs["lm_head_weight"] = make_tensor(dt, {V, H}, randn(V * H, seed + 2, 0.8));
      c.inputs["attention_mask"] = make_mask({B, T}, {1, 1, 0, 1, 0, 1});
      c.params.temperature = 1.3;
      c.params.jsd_beta = static_cast<double>(seed % 2);
      c.params.reduction = (seed / 2) % 2 ? "token_mean" : "sequence_mean";
      c.params.chunk_size = 2;
      return c;
    }
    case DivergenceId::masked_unbiased_dcor: {
      const std::int64_t B = 2, T = 4, D1 = 3, D2 = 2;
      c.inputs["samples_1"] = make_tensor(dt, {B, T, D1}, randn(B * T * D1, seed));
      // samples_2 correlated with samples_1 so the ratio is well inside (0, 1).
      std::vector<double> x = randn(B * T * D1, seed), y(static_cast<std::size_t>(B * T * D2));
      std::vector<double> noise = randn(y.size(), seed + 5, 0.5);
      for (std::int64_t i = 0; i < B * T; ++i)
        for (std::int64_t d = 0; d < D2; ++d) y[i * D2 + d] = x[i * D1 + d] * (d + 1) + noise[i * D2 + d];
      c.inputs["samples_2"] = make_tensor(dt, {B, T, D2}, y);
      c.inputs["attention_mask"] = make_mask({B, T}, {1, 1, 0, 1, 1, 1, 1, 0});
      c.params.safety_factor = 100.0;
      return c;
    }
    case DivergenceId::tvd_prob: {
      const std::int64_t N = 4, V = 6;
      c.inputs["p"] = make_tensor(dt, {N, V}, softmax_rows(randn(N * V, seed), N, V));
      c.inputs["q"] = make_tensor(dt, {N, V}, softmax_rows(randn(N * V, seed + 1), N, V));
      Tensor labels(DType::i64, {N});
      for (std::int64_t i = 0; i < N; ++i) labels.set(i, i == 2 ? -100.0 : 1.0);
      c.inputs["labels"] = labels;
      static const char* kReductions[] = {"batchmean", "sum", "mean", "none"};
      c.params.reduction = kReductions[seed % 4];
      return c;
    }
    default: break;
  }
  return c;
}

}  // namespace divcheck::testing

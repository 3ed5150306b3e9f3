// Case builders of the GPU tests (see gpu_cases.hpp).
#include "tests/cuda/gpu_cases.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/registry.hpp"
#include "kernels/cuda/case_args.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::gputest {

namespace {

using divcheck::testing::logit_case;
using divcheck::testing::make_mask;
using divcheck::testing::make_tensor;
using divcheck::testing::mask_role;
using divcheck::testing::randn;
using divcheck::testing::softmax_rows;
using divcheck::testing::want_all_grads;

// Which flat positions (logit rows: b*T + t; tvd_prob: rows) are masked in case c.
std::vector<bool> masked_positions(const Case& c) {
  if (c.id == DivergenceId::tvd_prob) {
    const Tensor& p = *c.input("p");
    std::vector<bool> m(static_cast<std::size_t>(p.dim(0)), false);
    if (const Tensor* l = c.input("labels"))
      for (std::int64_t i = 0; i < l->numel(); ++i)
        m[static_cast<std::size_t>(i)] = l->get(i) == static_cast<double>(c.params.ignore_index);
    return m;
  }
  const std::string role = mask_role(c.id);
  const Tensor* mask = role.empty() ? nullptr : c.input(role);
  const Tensor& y = *c.input(divcheck::testing::p_role(c.id));
  std::vector<bool> m(static_cast<std::size_t>(y.dim(0) * y.dim(1)), false);
  if (mask)
    for (std::int64_t i = 0; i < mask->numel(); ++i) m[static_cast<std::size_t>(i)] = !mask->nonzero(i);
  return m;
}

// Calls f(tensor, flat offset, row length) for every float input row at a masked position.
template <class F>
void for_masked_rows(Case& c, F&& f) {
  const std::vector<bool> m = masked_positions(c);
  for (auto& [role, t] : c.inputs) {
    if (!is_floating(t.dtype())) continue;
    const std::int64_t row = t.dim(t.rank() - 1);
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i]) f(t, static_cast<std::int64_t>(i) * row, row);
  }
}

}  // namespace

Case varied_case(DivergenceId id, DType dt, std::int64_t B, std::int64_t T, std::int64_t V, std::uint64_t seed,
                 double g) {
  const std::int64_t rows = B * T;
  const auto n = static_cast<std::size_t>(rows * V);
  std::mt19937_64 rng(seed * 104729 + 3);
  Case c;
  if (id == DivergenceId::tvd_prob) {
    c.id = id;
    c.inputs["p"] = make_tensor(dt, {rows, V}, softmax_rows(randn(n, seed, 2.0), rows, V));
    c.inputs["q"] = make_tensor(dt, {rows, V}, softmax_rows(randn(n, seed + 77, 2.0), rows, V));
    Tensor labels(DType::i64, {rows});
    for (std::int64_t i = 0; i < rows; ++i) labels.set(i, i == 1 ? -100.0 : static_cast<double>(i % 5));
    c.inputs["labels"] = labels;
    static const char* kReductions[] = {"batchmean", "sum", "mean", "none"};
    c.params.reduction = kReductions[seed % 4];
    want_all_grads(c, g);
    return c;
  }
  c = logit_case(id, B, T, V, dt, randn(n, seed, 3.0), randn(n, seed + 77, 3.0));
  const std::string m = mask_role(id);
  std::vector<int> mask(static_cast<std::size_t>(rows), 1);
  if (rows > 1) mask[1] = 0;
  if (!m.empty()) c.inputs[m] = make_mask({B, T}, mask);
  divcheck::testing::vary_logit_options(c, B, T, V, seed, rng);
  want_all_grads(c, g);
  return c;
}

Case with_identical_sides(Case c) {
  if (c.id == DivergenceId::tvd_prob) {
    c.inputs["q"] = c.inputs.at("p");
    return c;
  }
  c.inputs[divcheck::testing::q_role(c.id)] = c.inputs.at(divcheck::testing::p_role(c.id));
  return c;
}

Case with_garbage_at_masked(Case c) {
  const double garbage[] = {std::numeric_limits<double>::quiet_NaN(), INFINITY, -INFINITY, 1e30};
  for_masked_rows(c, [&](Tensor& t, std::int64_t off, std::int64_t len) {
    for (std::int64_t v = 0; v < len; ++v) t.set(off + v, garbage[v % 4]);
  });
  return c;
}

Case with_zeros_at_masked(Case c) {
  for_masked_rows(c, [](Tensor& t, std::int64_t off, std::int64_t len) {
    for (std::int64_t v = 0; v < len; ++v) t.set(off + v, 0.0);
  });
  return c;
}

std::string masked_gradients_are_plus_zero(const Case& c, const Outputs& o) {
  const std::vector<bool> m = masked_positions(c);
  for (const auto& [role, g] : o.grads) {
    const std::int64_t row = g.dim(g.rank() - 1);
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (!m[i]) continue;
      for (std::int64_t v = 0; v < row; ++v) {
        const double x = g.get(static_cast<std::int64_t>(i) * row + v);
        if (x != 0.0 || std::signbit(x))
          return "grad " + role + " at masked position " + std::to_string(i) + ", column " + std::to_string(v) +
                 " is " + std::to_string(x) + ", not +0";
      }
    }
  }
  return "";
}

std::int64_t expected_prefetches(const Case& c, std::int64_t clusters) {
  const cuda::LogitRoles roles = cuda::logit_roles(c);
  const Tensor& y = *roles.p;
  const std::int64_t rows = y.dim(0) * y.dim(1), V = y.dim(2);
  const auto elem = static_cast<std::int64_t>(element_size(y.dtype()));
  const std::vector<std::uint8_t> valid = roles.mask ? cuda::nonzero_flags(*roles.mask) : std::vector<std::uint8_t>{};
  auto is_valid = [&](std::int64_t r) { return valid.empty() || valid[static_cast<std::size_t>(r)] != 0; };
  if (V < 8) return 0;  // no whole chunk: nothing for the bulk copy engine
  std::int64_t n = 0;
  for (std::int64_t k = 0; k < std::min(clusters, rows); ++k) {
    std::int64_t prev = -1;
    for (std::int64_t r = k; r < rows; r += clusters) {
      if (!is_valid(r)) continue;
      if (prev >= 0 && (r * V * elem) % 16 == 0) ++n;  // prev requested r's slices ahead
      prev = r;
    }
  }
  return n;
}

void make_plain(Case& c) {
  c.inputs.erase("support_mask");
  if (info(c.id).props.has_log_target) c.params.log_target = true;
}

Case forward_only(Case c) {
  c.wants_grad.clear();
  c.grad_output = Tensor();
  return c;
}

}  // namespace divcheck::gputest

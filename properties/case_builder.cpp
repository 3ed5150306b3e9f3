// Tensor construction and the draws every family shares (see case_builder.hpp).
#include "properties/case_builder.hpp"

#include "core/errors.hpp"
#include "properties/gen_primitives.hpp"

namespace divcheck::pgen {

Tensor float_tensor(DType dt, const Shape& shape, const std::vector<double>& values) {
  Tensor t(dt, shape);
  if (static_cast<std::int64_t>(values.size()) != t.numel())
    throw InvalidArgument("values", std::to_string(values.size()), "does not match shape " + shape_string(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, values[static_cast<std::size_t>(i)]);
  return t;
}

Tensor int_tensor(DType dt, const Shape& shape, const std::vector<std::int64_t>& values) {
  Tensor t(dt, shape);
  if (static_cast<std::int64_t>(values.size()) != t.numel())
    throw InvalidArgument("values", std::to_string(values.size()), "does not match shape " + shape_string(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(values[static_cast<std::size_t>(i)]));
  return t;
}

rc::Gen<DType> gen_float_dtype() { return weighted<DType>({{4, DType::f32}, {2, DType::bf16}, {2, DType::f16}}); }
rc::Gen<DType> gen_narrow_dtype() { return weighted<DType>({{1, DType::bf16}, {1, DType::f16}}); }

rc::Gen<DType> gen_mask_dtype() {
  return weighted<DType>({{4, DType::boolean}, {2, DType::i64}, {1, DType::i32}, {1, DType::u8}, {1, DType::i8}});
}

std::int64_t draw_valid_value(DType dt) {
  switch (dt) {
    case DType::boolean: return 1;
    case DType::u8: return *weighted<std::int64_t>({{6, 1}, {1, 255}});
    default: return *weighted<std::int64_t>({{6, 1}, {1, 2}, {1, -1}});
  }
}

std::vector<std::int64_t> draw_mask(std::size_t n, DType dt, int valid_num, int valid_den) {
  // chance() shrinks toward false, so draw "masked" and negate: shrinking gives all-valid.
  std::vector<bool> masked = *rc::gen::container<std::vector<bool>>(n, chance(valid_den - valid_num, valid_den));
  const std::int64_t valid = draw_valid_value(dt);
  std::vector<std::int64_t> m(n);
  for (std::size_t i = 0; i < n; ++i) m[i] = masked[i] ? 0 : valid;
  return m;
}

namespace {

// One upstream-gradient value.
rc::Gen<double> grad_value(GradStyle style) {
  rc::Gen<double> random = rc::gen::map(int_toward(-1 << 20, 1 << 20, 1 << 18), [](std::int64_t k) {
    return 4.0 * static_cast<double>(k) / static_cast<double>(1 << 20);  // in [-4, 4]
  });
  rc::Gen<double> kind = style == GradStyle::usual
                             ? weighted<double>({{12, 1.0}, {4, 2.0 /*random*/}, {1, 0.0}, {2, -1.0}, {1, 0.5}})
                             : weighted<double>({{2, 1.0}, {4, 2.0}, {3, 0.0}, {3, -1.0}, {2, 1e3}, {2, 1e-3}, {1, -7.0}});
  return rc::gen::mapcat(kind, [random](double k) {
    if (k == 2.0) return random;
    if (k == -7.0) return rc::gen::map(random, [](double v) { return -std::abs(v) - 0.25; });
    return rc::gen::just(k);
  });
}

}  // namespace

Tensor draw_grad_output(const Shape& s, GradStyle style) {
  Tensor g(DType::f32, s);
  const std::size_t n = static_cast<std::size_t>(g.numel());
  std::vector<double> v;
  if (n <= 1) {
    v = {*grad_value(style)};
  } else if (n <= 4096) {
    v = *rc::gen::container<std::vector<double>>(n, grad_value(style));
  } else {
    SeededRng rng(draw_seed());
    v.resize(n);
    for (auto& x : v) x = rng.chance(1, 8) ? 0.0 : 4.0 * rng.unit() - 2.0;
  }
  for (std::size_t i = 0; i < n; ++i) g.set(static_cast<std::int64_t>(i), v[i]);
  return g;
}

std::vector<std::string> draw_wants(const DivergenceInfo& d, bool forward_only_too) {
  std::vector<std::string> all;
  for (const auto& r : d.roles)
    if (r.differentiable) all.emplace_back(r.name);
  if (all.empty() || (all.size() == 1 && !forward_only_too)) return all;
  // 0 = all of them; k >= 1 = only role k - 1; -1 = none (forward only, about 1 in 8 or 9).
  std::vector<std::pair<int, std::int64_t>> choices;
  if (all.size() == 1) {
    choices = {{7, 0}};
  } else {
    choices = {{3 * static_cast<int>(all.size()), 0}};
    for (std::size_t k = 0; k < all.size(); ++k) choices.push_back({1, static_cast<std::int64_t>(k + 1)});
  }
  if (forward_only_too) choices.push_back({1, -1});
  const std::int64_t pick = *weighted<std::int64_t>(choices);
  if (pick == 0) return all;
  if (pick < 0) return {};
  return {all[static_cast<std::size_t>(pick - 1)]};
}

std::int64_t count_valid(const std::vector<std::int64_t>& mask) {
  std::int64_t n = 0;
  for (auto v : mask) n += v != 0;
  return n;
}

}  // namespace divcheck::pgen

// Value distributions for generated tensors (see float_gen.hpp).
#include "properties/float_gen.hpp"

#include <cmath>
#include <limits>

namespace divcheck::pgen {

namespace {

constexpr std::int64_t kRes = std::int64_t{1} << 22;  // resolution of uniform values

// Weights of the three logit components: small multiples, uniform, wide magnitude.
constexpr int kWSmall = 2, kWUniform = 13, kWWide = 1;

double wide_value(double scale, std::int64_t e, bool negative, std::int64_t mant) {
  // magnitude scale * (1 + mant / 2^22) * 2^e, e in [-30, 2]
  double v = scale * std::ldexp(1.0 + static_cast<double>(mant) / static_cast<double>(kRes), static_cast<int>(e));
  return negative ? -v : v;
}

}  // namespace

double nan_value() { return std::numeric_limits<double>::quiet_NaN(); }

ValueDist logit_dist(double scale) {
  rc::Gen<double> small = rc::gen::map(int_toward(-8, 8, 0), [scale](std::int64_t k) { return scale * static_cast<double>(k) / 4.0; });
  rc::Gen<double> uniform = rc::gen::map(int_toward(-kRes, kRes, 0), [scale](std::int64_t k) {
    return 3.0 * scale * static_cast<double>(k) / static_cast<double>(kRes);
  });
  rc::Gen<double> wide = rc::gen::apply(
      [scale](std::int64_t e, bool neg, std::int64_t mant) { return wide_value(scale, e, neg, mant); },
      int_toward(-30, 2, 0), chance(1, 2), int_toward(0, kRes - 1, 0));
  rc::Gen<double> gen = rc::gen::mapcat(int_toward(0, kWSmall + kWUniform + kWWide - 1, 0),
                                        [small, uniform, wide](std::int64_t k) {
                                          if (k < kWSmall) return small;
                                          if (k < kWSmall + kWUniform) return uniform;
                                          return wide;
                                        });
  auto seeded = [scale](SeededRng& r) {
    std::int64_t k = r.range(0, kWSmall + kWUniform + kWWide - 1);
    if (k < kWSmall) return scale * static_cast<double>(r.range(-8, 8)) / 4.0;
    if (k < kWSmall + kWUniform) return 3.0 * scale * static_cast<double>(r.range(-kRes, kRes)) / static_cast<double>(kRes);
    return wide_value(scale, r.range(-30, 2), r.chance(1, 2), r.range(0, kRes - 1));
  };
  return {gen, seeded};
}

ValueDist uniform_dist(double lo, double hi) {
  auto at = [lo, hi](std::int64_t k) { return lo + (hi - lo) * static_cast<double>(k) / static_cast<double>(kRes); };
  return {rc::gen::map(int_toward(0, kRes, 0), at), [at](SeededRng& r) { return at(r.range(0, kRes)); }};
}

ValueDist garbage_dist() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {1e30, nan_value(), inf, -inf, -1e30, 65504.0, -65504.0,
                                0x1.fep127 /* bf16 max */, -0x1.fep127, 0x1p-140, -3.0e38};
  return {one_of_values(values), [values](SeededRng& r) {
            return values[static_cast<std::size_t>(r.range(0, static_cast<std::int64_t>(values.size()) - 1))];
          }};
}

std::vector<double> draw_values(std::size_t n, const ValueDist& dist, DType dt) {
  std::vector<double> v;
  if (n <= kShrinkableValues) {
    v = *rc::gen::container<std::vector<double>>(n, dist.gen);
  } else {
    SeededRng rng(draw_seed());
    v.resize(n);
    for (auto& x : v) x = dist.seeded(rng);
  }
  for (auto& x : v) x = round_to_dtype(x, dt);
  return v;
}

}  // namespace divcheck::pgen

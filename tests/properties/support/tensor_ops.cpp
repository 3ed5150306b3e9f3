// Tensor transforms for the metamorphic properties (see tensor_ops.hpp).
#include "support/tensor_ops.hpp"

#include <cmath>
#include <stdexcept>

#include "properties/gen_primitives.hpp"

namespace divcheck::props {

namespace {

// Strides: outer = product of dims before axis, inner = product after.
void split(const Shape& s, std::size_t axis, std::int64_t& outer, std::int64_t& n, std::int64_t& inner) {
  outer = 1;
  inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= s[i];
  n = s.at(axis);
  for (std::size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
}

}  // namespace

Tensor permute_axis(const Tensor& t, std::size_t axis, const std::vector<std::int64_t>& perm) {
  std::int64_t outer, n, inner;
  split(t.shape(), axis, outer, n, inner);
  if (static_cast<std::int64_t>(perm.size()) != n) throw std::logic_error("permute_axis: wrong permutation size");
  Tensor out(t.dtype(), t.shape());
  const std::size_t es = element_size(t.dtype());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::int64_t from = (o * n + j) * inner + i, to = (o * n + perm[static_cast<std::size_t>(j)]) * inner + i;
        std::copy_n(t.data() + from * static_cast<std::int64_t>(es), es, out.data() + to * static_cast<std::int64_t>(es));
      }
  return out;
}

std::vector<double> permute_axis(const std::vector<double>& v, const Shape& shape, std::size_t axis,
                                 const std::vector<std::int64_t>& perm) {
  std::int64_t outer, n, inner;
  split(shape, axis, outer, n, inner);
  std::vector<double> out(v.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t i = 0; i < inner; ++i)
        out[static_cast<std::size_t>((o * n + perm[static_cast<std::size_t>(j)]) * inner + i)] =
            v[static_cast<std::size_t>((o * n + j) * inner + i)];
  return out;
}

std::vector<std::int64_t> permutation_from_seed(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  pgen::SeededRng rng(seed);
  for (std::int64_t i = n - 1; i > 0; --i) std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(rng.range(0, i))]);
  return p;
}

int precision_bits(DType dt) {
  switch (dt) {
    case DType::bf16: return 8;
    case DType::f16: return 11;
    default: return 24;
  }
}

double quantize_group(std::vector<double>& values, const std::vector<std::size_t>& idx, DType dt, double min_q) {
  const int p = precision_bits(dt);
  double m = 0.0;
  for (auto i : idx)
    if (std::isfinite(values[i])) m = std::max(m, std::fabs(values[i]));
  double q;
  if (m == 0.0) {
    q = 0x1p-10;  // all zero: any grid works
  } else {
    const int e = std::ilogb(m);  // m < 2^(e+1)
    q = std::ldexp(1.0, e + 1 - (p - 2));
  }
  if (min_q > 0.0) q = std::max(q, std::ldexp(1.0, std::ilogb(min_q) + (std::ldexp(1.0, std::ilogb(min_q)) < min_q ? 1 : 0)));
  q = std::max(q, min_subnormal(dt));
  for (auto i : idx) {
    if (!std::isfinite(values[i])) continue;
    double k = std::nearbyint(values[i] / q);
    if (std::fabs(k * q) > max_finite(dt)) k = std::trunc(values[i] / q);  // rounding up would overflow
    values[i] = k * q;
  }
  return q;
}

std::vector<double> add_bounds(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> s(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) s[i] = a[i] + b.at(i);
  return s;
}

}  // namespace divcheck::props

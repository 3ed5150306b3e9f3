// Internal to the reference (templated; included only by .cpp files): the cancellation-free
// evaluation of the "centred" gradient form that every logit row shares,
//
//   G_v = X_v - w_v * sum_u X_u,        w = one side's full softmax row (sum_u w_u = 1),
//
// (KL: X = p d; JS: X = s p e^p; Hellinger: X = h^p; TV: X = s sgn(p - q) p; ...). Evaluated as
// written, G_v loses everything where X_u / w_u is nearly the same constant over the mass of w:
// TV's sgn is +-1, JS's e^p is ln 2 on columns the other side does not cover, Hellinger's
// h^p / p is 1/2 there, and any row where one column holds w_v = 1 - 1e-40. R then returns its
// rounding residue (~1e-34 |X|) instead of a true value that may be 1e-40 (docs/tolerances.md,
// "Exact zeros": a zero by accident is not a structural zero).
//
// The caller splits each column as X_u = c_{k(u)} w_u + z_u, with c_k one of <= 3 class
// constants (TV: the sign class; JS: ln 2 or 0; Hellinger: 1/2 or 0; else a single class 0) and
// a remainder z_u that is small where the cancellation lives. With the class masses
// W_k = sum_{k(u) = k} w_u (sum_k W_k = 1 exactly in R's math),
//
//   G_v = w_v sum_k (c_{k(v)} - c_k) W_k  +  z_v - w_v sum_u z_u,
//
// and for the dominant column (w_v > 1/2, at most one) the remainder part is evaluated as
// z_v (sum_{u != v} w_u) - w_v sum_{u != v} z_u, so no 1 - w_v is ever formed. Every sum here
// adds terms computed directly, so G_v is accurate to R's precision relative to the magnitudes
// of the c-differences times masses and of the z terms: no 1 - sum residue remains.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "reference/real_types.hpp"

namespace divcheck::ref {

template <class R>
class Centering {
 public:
  static constexpr int kMaxClasses = 3;

  // Starts a row: V columns, the class constants c_0..c_{n-1}.
  void begin(std::int64_t V, std::array<R, kMaxClasses> consts, int n_classes) {
    consts_ = consts;
    n_classes_ = n_classes;
    w_.assign(static_cast<std::size_t>(V), R(0));
    z_.assign(static_cast<std::size_t>(V), R(0));
    cls_.assign(static_cast<std::size_t>(V), 0);
  }
  // Column v: its weight w_v (0 for a structural zero), class k and remainder z_v.
  void set(std::int64_t v, const R& w, int k, const R& z) {
    w_[static_cast<std::size_t>(v)] = w;
    cls_[static_cast<std::size_t>(v)] = static_cast<std::uint8_t>(k);
    z_[static_cast<std::size_t>(v)] = z;
  }
  // Forms the class masses and the remainder sums; call after every set().
  void finish() {
    mass_.fill(R(0));
    z_sum_ = 0;
    dominant_ = -1;
    const R half = R(1) / 2;
    const auto V = static_cast<std::int64_t>(w_.size());
    for (std::int64_t v = 0; v < V; ++v) {
      const auto i = static_cast<std::size_t>(v);
      mass_[cls_[i]] += w_[i];
      if (z_[i] != 0) z_sum_ += z_[i];
      if (w_[i] > half) dominant_ = v;
    }
    // cls_part_[k] = sum_j (c_k - c_j) W_j: the class part of G_v / w_v for a column of class k.
    for (int k = 0; k < n_classes_; ++k) {
      cls_part_[k] = 0;
      for (int j = 0; j < n_classes_; ++j)
        if (j != k) cls_part_[k] += (consts_[k] - consts_[j]) * mass_[j];
    }
    rest_w_ = 0;
    rest_z_ = 0;
    if (dominant_ >= 0) {
      for (std::int64_t v = 0; v < V; ++v) {
        if (v == dominant_) continue;
        rest_w_ += w_[static_cast<std::size_t>(v)];
        rest_z_ += z_[static_cast<std::size_t>(v)];
      }
    }
  }
  // G_v = X_v - w_v sum X.
  R at(std::int64_t v) const {
    const auto i = static_cast<std::size_t>(v);
    const R& w = w_[i];
    if (v == dominant_) return w * cls_part_[cls_[i]] + (z_[i] * rest_w_ - w * rest_z_);
    return w * cls_part_[cls_[i]] + (z_[i] - w * z_sum_);
  }

 private:
  std::array<R, kMaxClasses> consts_{};
  int n_classes_ = 1;
  std::vector<R> w_, z_;
  std::vector<std::uint8_t> cls_;
  std::array<R, kMaxClasses> mass_{}, cls_part_{};
  R z_sum_ = 0, rest_w_ = 0, rest_z_ = 0;
  std::int64_t dominant_ = -1;
};

}  // namespace divcheck::ref

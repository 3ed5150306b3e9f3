// Small shrinkable building blocks for the case generators: integers that shrink toward a
// chosen value (RapidCheck's own inRange grows with the size parameter and shrinks toward its
// lower end, and its element()/weightedElement() do not shrink at all), weighted choices that
// shrink toward their first (simplest) option, and a deterministic RNG for large tensors.
// All generators here are plain rc::Gen values, so everything built from them shrinks.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <rapidcheck.h>

namespace divcheck::pgen {

// Uniform in [lo, hi] (inclusive) at every size; shrinks toward `target` (clamped into range).
rc::Gen<std::int64_t> int_toward(std::int64_t lo, std::int64_t hi, std::int64_t target);

// In [lo, hi]; the upper end grows with RapidCheck's size (size 0 -> lo, size >= 100 -> hi);
// shrinks toward lo. Used for shapes: small sizes give small cases.
rc::Gen<std::int64_t> sized_int(std::int64_t lo, std::int64_t hi);

// True with probability num/den; shrinks toward false.
rc::Gen<bool> chance(int num, int den);

// One of `choices` with probability proportional to its weight; shrinks toward the first
// choice, so list the simplest first.
template <typename T>
rc::Gen<T> weighted(std::vector<std::pair<int, T>> choices) {
  std::int64_t total = 0;
  for (const auto& c : choices) total += c.first;
  return rc::gen::map(int_toward(0, total - 1, 0), [choices](std::int64_t k) {
    for (const auto& c : choices) {
      if (k < c.first) return c.second;
      k -= c.first;
    }
    return choices.back().second;
  });
}

// Uniform over `values`; shrinks toward the first.
template <typename T>
rc::Gen<T> one_of_values(std::vector<T> values) {
  return rc::gen::map(int_toward(0, static_cast<std::int64_t>(values.size()) - 1, 0),
                      [values](std::int64_t k) { return values[static_cast<std::size_t>(k)]; });
}

// A deterministic 64-bit generator (splitmix64) for tensors too large to shrink element-wise;
// its stream is fixed by the seed on every platform (unlike std distributions).
class SeededRng {
 public:
  explicit SeededRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double unit();                                   // uniform in [0, 1)
  std::int64_t range(std::int64_t lo, std::int64_t hi);  // uniform in [lo, hi]
  bool chance(int num, int den);

 private:
  std::uint64_t state_;
};

// Inside rc::gen::exec: a seed for SeededRng (drawn, not shrunk).
std::uint64_t draw_seed();

}  // namespace divcheck::pgen

// Shrinkable integer/choice generators and the seeded RNG (see gen_primitives.hpp).
#include "properties/gen_primitives.hpp"

#include <algorithm>

#include <rapidcheck/shrink/Shrink.h>
#include <rapidcheck/shrinkable/Create.h>

namespace divcheck::pgen {

rc::Gen<std::int64_t> int_toward(std::int64_t lo, std::int64_t hi, std::int64_t target) {
  if (hi < lo) std::swap(lo, hi);
  target = std::clamp(target, lo, hi);
  return rc::Gen<std::int64_t>([lo, hi, target](const rc::Random& random, int) {
    const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;  // 0: all 2^64
    std::uint64_t r = rc::Random(random).next();
    std::int64_t v = static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + (span == 0 ? r : r % span));
    return rc::shrinkable::shrinkRecur(v, [target](std::int64_t x) { return rc::shrink::towards<std::int64_t>(x, target); });
  });
}

rc::Gen<std::int64_t> sized_int(std::int64_t lo, std::int64_t hi) {
  return rc::gen::withSize([lo, hi](int size) {
    const int s = std::clamp(size, 0, 100);
    const std::int64_t top = lo + (hi - lo) * s / 100;
    return int_toward(lo, top, lo);
  });
}

rc::Gen<bool> chance(int num, int den) {
  // k uniform in [0, den - 1]; true iff k < num. Shrinks toward den - 1, which maps to false.
  return rc::gen::map(int_toward(0, den - 1, den - 1), [num](std::int64_t k) { return k < num; });
}

std::uint64_t SeededRng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SeededRng::unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }

std::int64_t SeededRng::range(std::int64_t lo, std::int64_t hi) {
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + (span == 0 ? next() : next() % span));
}

bool SeededRng::chance(int num, int den) { return static_cast<int>(next() % static_cast<std::uint64_t>(den)) < num; }

std::uint64_t draw_seed() {
  return *rc::gen::noShrink(rc::gen::map(int_toward(INT64_MIN, INT64_MAX, 0),
                                         [](std::int64_t v) { return static_cast<std::uint64_t>(v); }));
}

}  // namespace divcheck::pgen

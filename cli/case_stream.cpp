// The case-stream functions (see case_stream.hpp for the contract).
#include "cli/case_stream.hpp"

namespace divcheck::gate {

// splitmix64 (Steele, Lea & Flood 2014): a bijective 64-bit mixer with good avalanche.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// FNV-1a, 64 bit: the divergence enters the seed by name, so reordering registry rows (or
// adding one) leaves every other divergence's cases unchanged.
std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

std::uint64_t case_seed(std::uint64_t run_seed, std::string_view divergence_name, std::int64_t k) {
  return splitmix64(splitmix64(run_seed ^ fnv1a64(divergence_name)) ^ static_cast<std::uint64_t>(k));
}

int case_size(std::int64_t k) { return static_cast<int>((k % 101) * 7 % 101); }

std::size_t family_index(std::int64_t k, std::size_t num_families) {
  return static_cast<std::size_t>(k) % num_families;
}

bool on_shard(std::int64_t k, int shard_index, int shard_count) { return k % shard_count == shard_index; }

}  // namespace divcheck::gate

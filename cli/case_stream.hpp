// The gate's case stream: which case is case k of divergence d in a run with seed S. Every
// number here is part of the reproducibility contract (a nightly's failure is regenerated from
// (S, d, k) alone), so changing any function below changes every case: don't, without bumping
// kReportSchemaVersion and saying so in docs/report-schema.md.
//
//   family(d, k) = families(d)[k mod |families(d)|]
//   seed(S, d, k) = splitmix64(splitmix64(S ^ fnv1a64(name(d))) ^ k)
//   size(k)      = (7 k) mod 101          (RapidCheck size 0..100, small and large interleaved)
//   shard(k)     = k mod N
#pragma once

#include <cstdint>
#include <string_view>

namespace divcheck::gate {

// The nightly's fixed default seed (printed by every run and written to report.json).
inline constexpr std::uint64_t kDefaultSeed = 20261130;

std::uint64_t splitmix64(std::uint64_t x);
std::uint64_t fnv1a64(std::string_view s);

std::uint64_t case_seed(std::uint64_t run_seed, std::string_view divergence_name, std::int64_t k);
int case_size(std::int64_t k);
std::size_t family_index(std::int64_t k, std::size_t num_families);
bool on_shard(std::int64_t k, int shard_index, int shard_count);

}  // namespace divcheck::gate

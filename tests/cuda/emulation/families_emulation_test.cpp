// The generator families (properties/generators.hpp) on the CUDA kernels run by the host
// emulator: every family of every row of issue 3, judged against the float128 reference, on a
// plan with a cluster exchange (2 CTAs of 256 threads per row, slices staged, tame forms
// allowed), and the forward-only cases that the automatic plan streams (stream_plan.hpp: KL,
// cross-entropy and the temperature KL row by one-pass sums, the Jefferys rows and squared
// Hellinger by centred records) on that plan too. The GPU runs the same families on the device
// (tests/cuda/families_test.cpp) and the gate runs them by the thousand; this puts the kernels'
// logic under the inputs that break real kernels (ties, padded -inf columns, identical rows,
// fully masked sequences, garbage at masked positions, extreme logits, NaN rows) in every build,
// so that a kernel change made without a GPU meets them before it reaches one. Elementary
// functions are the host's (emulator.hpp), so what this checks is the kernels' control flow,
// exchanges, masks and edge-case selects, not the device's ex2/lg2 approximations (those are the
// GPU tests' and the gate's). Each case runs twice and must give the same bits (determinism under
// another interleaving of the threads).
//
// Each row prints its mix (cases per family, forward-only launches) and its worst error in
// units of the bound; the test fails when any family was not drawn.
//
// Longer runs (a no-GPU machine's nightly check of the kernels' logic, or after a kernel change
// made without a GPU): DIVCHECK_EMULATION_ROUNDS=N draws N rounds of the same mix with other
// seeds (round 0 is the default run's cases; about 1.3 s per case on the 2-core development
// machine, 26 cases per row and round), DIVCHECK_EMULATION_SEED=S moves every round's seeds
// (default 0), DIVCHECK_EMULATION_FAMILIES=F1,F2 keeps those families only (each must be one of
// the row's). A failure names the family, size and seed: `divcheck export-case --divergence ROW
// --family F --seed SEED --size N` writes the same case.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/case_args.hpp"
#include "kernels/cuda/stream_plan.hpp"
#include "properties/case_show.hpp"
#include "properties/generators.hpp"
#include "properties/verdict.hpp"
#include "tests/cuda/emulation/emulated_backend.hpp"
#include "tests/cuda/gpu_test_support.hpp"

namespace divcheck::gputest {
namespace {

// RapidCheck sizes of the draws: vocabularies of 2 to ~1000 columns (printed per row), so
// slices of 8-column chunks that are whole, partial and, up to V = 8, empty in the second
// CTA. The GPU tests add the medium sizes.
constexpr int kSizes[] = {10, 30};

// A positive integer from the environment, or `fallback` when unset; anything else is an error
// naming the variable and its value.
std::uint64_t env_count(const char* name, std::uint64_t fallback, std::uint64_t min) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (*end != '\0' || errno != 0 || text[0] == '-' || v < min)
    throw std::invalid_argument(std::string(name) + "=" + text + ": not an integer >= " + std::to_string(min));
  return v;
}

// The families of `id` that DIVCHECK_EMULATION_FAMILIES keeps (all when unset); a name that is
// not one of the row's families is an error naming it.
std::vector<Family> selected_families(DivergenceId id) {
  const char* text = std::getenv("DIVCHECK_EMULATION_FAMILIES");
  if (text == nullptr || *text == '\0') return families(id);
  std::vector<Family> out;
  std::string list(text);
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, comma - at);
    bool found = false;
    for (const Family& f : families(id))
      if (f.name == name) out.push_back(f), found = true;
    if (!found)
      throw std::invalid_argument("DIVCHECK_EMULATION_FAMILIES=" + list + ": \"" + name + "\" is not a family of " +
                                  std::string(name_of(id)));
    at = comma + 1;
  }
  return out;
}

void check_families(DivergenceId id) {
  std::uint64_t rounds = 1, run_seed = 0;
  std::vector<Family> chosen;
  try {
    rounds = env_count("DIVCHECK_EMULATION_ROUNDS", 1, 1);
    run_seed = env_count("DIVCHECK_EMULATION_SEED", 0, 0);
    chosen = selected_families(id);
  } catch (const std::exception& ex) {
    FAIL() << ex.what();
  }
  const auto emulated = make_emulated_cuda_backend(cuda::CudaOptions{2, true, true, nullptr, 256});
  // The automatic plan with 128-thread CTAs: a forward-only launch of KL, cross-entropy, the
  // temperature KL row, the Jefferys rows and squared Hellinger takes the streamed kernel there
  // (stream_plan.hpp; the one-pass sums or the centred records), which the forced cluster plan
  // above never reaches; such cases run on it as well.
  cuda::CudaOptions automatic;
  automatic.row_threads = 128;
  const auto streamed = make_emulated_cuda_backend(automatic);
  std::map<std::string, int> drawn;
  int forward_only = 0, streamed_forward = 0;
  double worst = 0.0;
  std::int64_t v_min = -1, v_max = -1;  // the vocabularies drawn (columns per row)
  for (std::uint64_t round = 0; round < rounds; ++round) {
    // Round 0 of run seed 0 is the default run's cases; the others move by a multiplicative hash.
    std::uint64_t seed =
        0xe1a70000u + static_cast<std::uint64_t>(id) * 1000 + (run_seed + round) * 0x9E3779B97F4A7C15ull;
    for (const Family& f : chosen) {
      const std::string family(f.name);
      for (int size : kSizes) {
        const Case c = draw_case(id, f.name, ++seed, size).value();
        SCOPED_TRACE("family " + family + " size " + std::to_string(size) + " seed " + std::to_string(seed));
        Outputs got;
        try {
          got = compute(*emulated, c);
        } catch (const std::exception& ex) {
          ADD_FAILURE() << label(c) << ": the emulated cuda backend threw: " << ex.what();
          continue;
        }
        const Expected expected = compute_reference(c);  // (the float128 reference: once per case)
        const Verdict v = judge(c, got, expected);
        EXPECT_TRUE(v.pass) << label(c) << ": " << v.summary() << "\n" << describe_case(c, 48);
        // The emulator's OS threads interleave differently on every run: the same bits again
        // say that no result depends on the order in which threads or CTAs get there.
        EXPECT_TRUE(bitwise_same(got, compute(*emulated, c))) << label(c) << ": a second run gave other bits";
        worst = std::max(worst, v.worst_ratio);
        ++drawn[family];
        if (c.wants_grad.empty()) ++forward_only;
        if (c.wants_grad.empty() && id != DivergenceId::tvd_prob &&
            cuda::stream_plan(cuda::logit_args_of(c, automatic)).streamed) {
          const Outputs s = compute(*streamed, c);
          const Verdict vs = judge(c, s, expected);
          EXPECT_TRUE(vs.pass) << label(c) << " (streamed): " << vs.summary() << "\n" << describe_case(c, 48);
          EXPECT_TRUE(bitwise_same(s, compute(*streamed, c))) << label(c) << ": the streamed run gave other bits";
          worst = std::max(worst, vs.worst_ratio);
          ++streamed_forward;
        }
        for (const auto& [role, t] : c.inputs)
          if (t.rank() >= 2 && t.dim(t.rank() - 1) > 1) {
            const std::int64_t v = t.dim(t.rank() - 1);
            v_min = v_min < 0 ? v : std::min(v_min, v);
            v_max = std::max(v_max, v);
          }
      }
    }
  }
  std::cout << "[ families ] " << name_of(id) << ": " << chosen.size() << " families, " << rounds
            << (rounds == 1 ? " round" : " rounds") << " (seed " << run_seed << "), ";
  for (const auto& [name, n] : drawn) std::cout << name << " " << n << ", ";
  std::cout << forward_only << " forward only (" << streamed_forward << " of them also streamed), V " << v_min << ".."
            << v_max << ", worst " << worst << " of the bound\n";
  for (const Family& f : chosen)
    EXPECT_EQ(drawn[std::string(f.name)], rounds * std::size(kSizes)) << "family " << f.name;
  // Every row whose forward-only launch can take the streamed kernel met it in these draws (1 to 6
  // cases per row in the default run); Jensen-Shannon, total variation and tvd_prob have none.
  const bool streams = id != DivergenceId::jensen_shannon_divergence && id != DivergenceId::total_variation &&
                       id != DivergenceId::tvd_prob;
  if (streams && chosen.size() == families(id).size())
    EXPECT_GT(streamed_forward, 0) << "no forward-only case took the streamed kernel";
}

TEST(EmulatedFamilies, MaskedKlDivergence) { check_families(DivergenceId::masked_kl_divergence); }
TEST(EmulatedFamilies, MaskedJefferysDivergence) { check_families(DivergenceId::masked_jefferys_divergence); }
TEST(EmulatedFamilies, MaskedCrossEntropy) { check_families(DivergenceId::masked_cross_entropy); }
TEST(EmulatedFamilies, JefferysDivergence) { check_families(DivergenceId::jefferys_divergence); }
TEST(EmulatedFamilies, JensenShannonDivergence) { check_families(DivergenceId::jensen_shannon_divergence); }
TEST(EmulatedFamilies, SquaredHellingerDistance) { check_families(DivergenceId::squared_hellinger_distance); }
TEST(EmulatedFamilies, TotalVariation) { check_families(DivergenceId::total_variation); }
TEST(EmulatedFamilies, TemperatureScaledMaskedKl) {
  check_families(DivergenceId::temperature_scaled_masked_kl_divergence);
}
TEST(EmulatedFamilies, TemperatureScaledMaskedJefferys) {
  check_families(DivergenceId::temperature_scaled_masked_jefferys_divergence);
}
TEST(EmulatedFamilies, TvdProb) { check_families(DivergenceId::tvd_prob); }

}  // namespace
}  // namespace divcheck::gputest

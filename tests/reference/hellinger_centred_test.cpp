// The centred one-pass records of the squared Hellinger distance (kernels/math/hellinger_centred.hpp),
// taken in the structure of the streamed forward kernel and judged by the verdict itself on the
// families of tests/reference/centred_records.hpp (the harness: near-one-hot rows differing in the
// tail, partial ties, one column a float ulp apart, near-identical and shifted rows, distillation-like
// pairs down to a noise of 1e-4). The controls that show the test can fail: a merge that adds the
// records' r without moving them to the merged centre, and one that moves them without the term
// (λᵢ − λ)² bᵢ.
#include "kernels/math/hellinger_centred.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/reference/centred_records.hpp"

namespace divcheck {
namespace {

using centred_test::families;
using centred_test::judge_rows;
using centred_test::kChunk;
using centred_test::Rows;
using math::HellingerRecord;

// The records of the streamed kernel's HellingerCentredPolicy (row_policies.cuh): the roots
// e^(t / 2) by the halved exponential.
struct HellingerRecords {
  using Record = HellingerRecord;
  static Record chunk(const float (&ty)[kChunk], const float (&tx)[kChunk], int n) {
    float u[kChunk] = {}, w[kChunk] = {};
    for (int k = 0; k < n; ++k) {
      u[k] = math::f_softmax_exp_half_ftz(ty[k]);
      w[k] = math::f_softmax_exp_half_ftz(tx[k]);
    }
    return math::hellinger_chunk_record<kChunk>(u, w);
  }
  static Record rescale(const Record& r, float fy, float fx) { return math::hellinger_rescale(r, fy, fx); }
  static float loss(const Record& r) { return math::hellinger_record_loss(r); }
};

// Mutants: r added as it is (each still centred at its own λ), and moved without (λᵢ − λ)² bᵢ.
HellingerRecord merge_without_recentring(const HellingerRecord& x, const HellingerRecord& y) {
  return {x.a + y.a, x.b + y.b, x.r + y.r};
}
HellingerRecord merge_without_the_square(const HellingerRecord& x, const HellingerRecord& y) {
  if (math::hellinger_empty(x)) return y;
  if (math::hellinger_empty(y)) return x;
  const float lambda = math::hellinger_centre(x.a + y.a, x.b + y.b);
  auto moved = [&](const HellingerRecord& z) { return z.r * (lambda / math::hellinger_centre(z.a, z.b)); };
  return {x.a + y.a, x.b + y.b, moved(x) + moved(y)};
}

template <auto kMerge = math::hellinger_merge>
float centred_row_loss(const std::vector<float>& y, const std::vector<float>& x) {
  return centred_test::centred_row_loss<HellingerRecords, kMerge>(y, x);
}

Case rows_case(const Rows& r, DType dt) {
  return centred_test::rows_case(DivergenceId::squared_hellinger_distance, r, dt);
}

TEST(HellingerCentred, EveryFamilyIsWithinTheGatesBound) {
  centred_test::expect_every_family_within_the_bound(DivergenceId::squared_hellinger_distance, 20261208,
                                                     centred_row_loss<>);
}

TEST(HellingerCentred, IdenticalRowsGiveExactlyZero) {
  EXPECT_EQ(centred_test::identical_rows_loss(centred_row_loss<>), 0.0f);
}

TEST(HellingerCentred, MergesAreSymmetricBitForBit) {
  centred_test::expect_merges_symmetric_bit_for_bit<HellingerRecords, math::hellinger_merge>();
}

TEST(HellingerCentred, TheFamiliesCatchMergesThatDoNotRecentre) {
  // Without the move to the merged centre the records miss 2 (λᵢ − λ) Σ w (u − λᵢ w) + (λᵢ − λ)² bᵢ
  // wherever the chunks' λ differ, and without the square the second of them: the spread families
  // must catch both (each fails them by 78 to 7000 bounds); the others are only printed.
  const std::set<std::string> must_catch = centred_test::spread_families();
  int caught = 0;
  for (const Rows& r : families(4096, 20261208 + 4096)) {
    const Case c = rows_case(r, DType::f32);
    const Verdict plain = judge_rows(c, centred_row_loss<merge_without_recentring>);
    const Verdict square = judge_rows(c, centred_row_loss<merge_without_the_square>);
    std::printf("  %-62s no recentring: %s\n  %-62s no square: %s\n", r.name.c_str(), plain.summary().c_str(), "",
                square.summary().c_str());
    if (must_catch.count(r.name)) {
      EXPECT_FALSE(plain.pass) << r.name;
      EXPECT_FALSE(square.pass) << r.name;
      ++caught;
    }
  }
  EXPECT_EQ(caught, static_cast<int>(must_catch.size()));  // every named family was drawn
}

}  // namespace
}  // namespace divcheck

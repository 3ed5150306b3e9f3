// The centred one-pass records of the Jefferys loss (kernels/math/jefferys_centred.hpp), taken in
// the structure of the streamed forward kernel (stream_rows_kernel.cuh: each thread's chunks of
// 8 columns relative to its own maxima, the chunks' records merged in column order, the threads'
// records moved to common maxima and merged by a pairwise tree), judged against the reference by
// the verdict itself (judge: the bound (c + sigma) u scale of the gate) on the rows that broke the
// plain one-pass sums of Jefferys on the H200 (near-one-hot rows differing in the tail, partial
// ties, near-identical rows: docs/tolerances.md "The CUDA kernels' one-pass statistics") and on
// distillation-like pairs down to a noise of 1e-4. The control: the plain one-pass form on the same
// rows is reported for comparison; the control that shows the test can fail is a mutant merge that
// adds the records' sums without moving them to the merged centre.
#include "kernels/math/jefferys_centred.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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
using math::JefferysRecord;

// The records of the streamed kernel's JefferysCentredPolicy (row_one_pass_sums.cuh, its chunk).
struct JefferysRecords {
  using Record = JefferysRecord;
  static Record chunk(const float (&ty)[kChunk], const float (&tx)[kChunk], int n) {
    float ey[kChunk] = {}, ex[kChunk] = {}, g[kChunk] = {};
    for (int k = 0; k < n; ++k) {
      ey[k] = math::f_softmax_exp(ty[k]);
      ex[k] = math::f_softmax_exp(tx[k]);
      g[k] = ty[k] - tx[k];
    }
    return math::jefferys_chunk_record<kChunk>(ey, ex, g);
  }
  static Record rescale(const Record& r, float fy, float fx) { return math::jefferys_rescale(r, fy, fx); }
  static float loss(const Record& r) { return math::jefferys_record_loss(r); }
  static math::JefferysCentre centre(const Record& r) { return math::jefferys_centre(r.a, r.b); }
  static Record merge_held(const Record& x, const math::JefferysCentre& cx, const Record& y,
                           const math::JefferysCentre& cy, math::JefferysCentre& c) {
    return math::jefferys_merge_centred(x, cx, y, cy, c);
  }
};

// The mutant: the sums added as they are, each still centred at its own ratio.
JefferysRecord merge_without_recentring(const JefferysRecord& x, const JefferysRecord& y) {
  return {x.a + y.a, x.b + y.b, x.e + y.e, x.k + y.k};
}

template <auto kMerge = math::jefferys_merge>
float centred_row_loss(const std::vector<float>& y, const std::vector<float>& x) {
  return centred_test::centred_row_loss<JefferysRecords, kMerge>(y, x);
}

// The plain one-pass form the first CUDA version used (A_p / S_y + A_q / S_x at the row's
// maxima, float sums in column order): the control.
float plain_one_pass_row_loss(const std::vector<float>& y, const std::vector<float>& x) {
  const float my = *std::max_element(y.begin(), y.end()), mx = *std::max_element(x.begin(), x.end());
  float sy = 0, sx = 0, ap = 0, aq = 0;
  for (std::size_t v = 0; v < y.size(); ++v) {
    const float ty = y[v] - my, tx = x[v] - mx;
    const float ey = math::f_softmax_exp(ty), ex = math::f_softmax_exp(tx);
    sy += ey;
    sx += ex;
    ap += ey * (ty - tx);
    aq += ex * (tx - ty);
  }
  return ap / sy + aq / sx;
}

Case rows_case(const Rows& r, DType dt) { return centred_test::rows_case(DivergenceId::jefferys_divergence, r, dt); }

TEST(JefferysCentred, EveryFamilyIsWithinTheGatesBound) {
  centred_test::expect_every_family_within_the_bound(DivergenceId::jefferys_divergence, 20261207, centred_row_loss<>);
}

TEST(JefferysCentred, IdenticalRowsGiveExactlyZero) {
  EXPECT_EQ(centred_test::identical_rows_loss(centred_row_loss<>), 0.0f);
}

TEST(JefferysCentred, MergesAreSymmetricBitForBit) {
  centred_test::expect_merges_symmetric_bit_for_bit<JefferysRecords, math::jefferys_merge>();
}

TEST(JefferysCentred, HeldCentresGiveTheSameBits) {
  centred_test::expect_held_centres_give_the_same_bits<JefferysRecords, math::jefferys_merge>();
}

TEST(JefferysCentred, TheFamiliesCatchAMergeThatDoesNotRecentre) {
  // The control: without the move to the merged centre the sums miss the pieces (κ − κᵢ) δ bᵢ and
  // the loss is wrong wherever the chunks' ratios differ; the same rows must catch it. The plain
  // one-pass form (the first CUDA version's) is printed beside it: it passes these rows in
  // practice, but its worst-case error is not within the bound for close pairs (docs/analysis/
  // jefferys_one_pass_forward.py), which is why the kernels do not use it.
  // The spread families must catch it; in the near-identical ones (noise 1e-4, a few differing tail
  // columns, shifted or identical rows) the missing pieces (κ − κᵢ) δ bᵢ are of second order in a
  // tiny spread and may stay inside the bound, so they are only printed.
  const std::set<std::string> must_catch = centred_test::spread_families();
  int caught = 0;
  for (const Rows& r : families(4096, 20261207 + 4096)) {
    const Case c = rows_case(r, DType::f32);
    const Verdict mutant = judge_rows(c, centred_row_loss<merge_without_recentring>);
    const Verdict plain = judge_rows(c, plain_one_pass_row_loss);
    std::printf("  %-62s no recentring: %s\n  %-62s plain one-pass: %s\n", r.name.c_str(), mutant.summary().c_str(), "",
                plain.summary().c_str());
    if (must_catch.count(r.name)) {
      EXPECT_FALSE(mutant.pass) << r.name;
      ++caught;
    }
  }
  EXPECT_EQ(caught, static_cast<int>(must_catch.size()));  // every named family was drawn
}

}  // namespace
}  // namespace divcheck

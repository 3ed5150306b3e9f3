// The harness of the centred one-pass records' tests (jefferys_centred_test.cpp,
// hellinger_centred_test.cpp): a row taken in the structure of the streamed forward kernel
// (stream_rows_kernel.cuh: each thread's chunks of 8 columns relative to its own maxima, the chunks'
// records merged in column order, the threads' records moved to common maxima and merged by a
// pairwise tree), the families of rows that break one-pass forms (near-one-hot rows differing in
// the tail, partial ties, near-identical and shifted rows, distillation-like pairs down to a noise
// of 1e-4: docs/tolerances.md), and the verdict itself as the judge (the bound (c + sigma) u scale
// of the gate).
//
// A Records type supplies: Record; static Record chunk(const float (&ty)[8], const float (&tx)[8],
// int n) (the record of the first n columns of a chunk of shifted logits); static Record
// rescale(const Record&, float fy, float fx); static float loss(const Record&); and a merge
// Record (*)(const Record&, const Record&) is passed separately, so that a test can hand in a mutant.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/math/hd.hpp"
#include "properties/verdict.hpp"
#include "reference/reference.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck::centred_test {

constexpr int kChunk = 8;
constexpr int kChunksPerThread = 4;  // the 16-bit streamed kernel's R

// One row by the records (p side y, q side x; tame: finite logits within 64 of the max).
template <class Records, auto kMerge>
float centred_row_loss(const std::vector<float>& y, const std::vector<float>& x) {
  using Record = typename Records::Record;
  struct ThreadPart {
    Record rec;
    float my = -INFINITY, mx = -INFINITY;
  };
  const int V = static_cast<int>(y.size());
  const int per_thread = kChunk * kChunksPerThread;
  std::vector<ThreadPart> parts;
  for (int t0 = 0; t0 < V; t0 += per_thread) {
    const int t1 = std::min(V, t0 + per_thread);
    ThreadPart tp;
    for (int v = t0; v < t1; ++v) {
      tp.my = std::max(tp.my, y[v]);
      tp.mx = std::max(tp.mx, x[v]);
    }
    for (int c0 = t0; c0 < t1; c0 += kChunk) {
      float ty[kChunk] = {}, tx[kChunk] = {};
      const int n = std::min(kChunk, t1 - c0);
      for (int k = 0; k < n; ++k) {
        ty[k] = y[c0 + k] - tp.my;
        tx[k] = x[c0 + k] - tp.mx;
      }
      tp.rec = kMerge(tp.rec, Records::chunk(ty, tx, n));
    }
    parts.push_back(tp);
  }
  while (parts.size() > 1) {  // pairwise tree over the threads, at common maxima
    std::vector<ThreadPart> next;
    for (std::size_t i = 0; i + 1 < parts.size(); i += 2) {
      ThreadPart m;
      m.my = std::max(parts[i].my, parts[i + 1].my);
      m.mx = std::max(parts[i].mx, parts[i + 1].mx);
      auto moved = [&](const ThreadPart& p) {
        return Records::rescale(p.rec, math::f_softmax_exp(p.my - m.my), math::f_softmax_exp(p.mx - m.mx));
      };
      m.rec = kMerge(moved(parts[i]), moved(parts[i + 1]));
      next.push_back(m);
    }
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return Records::loss(parts[0].rec);
}

struct Rows {
  std::string name;
  std::int64_t V;
  std::vector<double> p, q;  // rows of V each
};

// One position per sequence of a logit row with a support-mask signature (jefferys_divergence,
// squared_hellinger_distance): reduction "none" gives each sequence's mean, here one row's loss.
inline Case rows_case(DivergenceId id, const Rows& r, DType dt) {
  const std::int64_t B = static_cast<std::int64_t>(r.p.size()) / r.V;
  Case c = testing_ref::logit_case(id, B, 1, r.V, r.p, r.q, dt);
  c.params.reduction = "none";
  c.wants_grad.clear();
  return c;
}

using RowLoss = float (*)(const std::vector<float>&, const std::vector<float>&);

inline Verdict judge_rows(const Case& c, RowLoss loss) {
  const Tensor& y = c.inputs.at("clean_logits");
  const Tensor& x = c.inputs.at("noisy_logits");
  const std::int64_t V = y.shape().back(), rows = y.numel() / V;
  Outputs o;
  o.loss = Tensor(DType::f32, loss_shape(c));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<float> yr(static_cast<std::size_t>(V)), xr(static_cast<std::size_t>(V));
    for (std::int64_t v = 0; v < V; ++v) {
      yr[v] = static_cast<float>(y.get(r * V + v));
      xr[v] = static_cast<float>(x.get(r * V + v));
    }
    o.loss.set(r, loss(yr, xr));
  }
  return judge(c, o, compute_reference(c));
}

// The families, 4 rows each, V = 4096 (128 threads of 32 columns) or an odd V for a short last
// chunk and thread.
inline std::vector<Rows> families(std::int64_t V, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unif(-8.0, 8.0);
  std::vector<Rows> out;
  auto add = [&](const std::string& name, auto make) {
    Rows r{name, V, {}, {}};
    for (int row = 0; row < 4; ++row) make(row, r.p, r.q);
    out.push_back(std::move(r));
  };
  add("independent uniform [-8, 8)", [&](int, auto& p, auto& q) {
    for (std::int64_t v = 0; v < V; ++v) p.push_back(unif(rng)), q.push_back(unif(rng));
  });
  for (double noise : {1.0, 1e-2, 1e-4}) {
    add("teacher N(0, 4^2), student + noise " + std::to_string(noise), [&](int, auto& p, auto& q) {
      for (std::int64_t v = 0; v < V; ++v) {
        const double t = 4.0 * normal(rng);
        p.push_back(t);
        q.push_back(t + noise * normal(rng));
      }
    });
  }
  // Near one-hot: one column 40 above the rest (they sit within 64 of it: tame); the sides agree
  // except in a few tail columns, or at the hot column by a last-bits difference.
  add("near one-hot, tail columns differ", [&](int row, auto& p, auto& q) {
    const std::int64_t hot = (V / 3 + 37 * row) % V;
    for (std::int64_t v = 0; v < V; ++v) {
      const double t = v == hot ? 30.0 : -10.0 + 2.0 * normal(rng);
      p.push_back(t);
      q.push_back(v != hot && v % 97 == 5 ? t + 4.0 * normal(rng) : t);
    }
  });
  add("near one-hot, the hot column differs by 2^-10", [&](int row, auto& p, auto& q) {
    const std::int64_t hot = (V / 2 + 11 * row) % V;
    for (std::int64_t v = 0; v < V; ++v) {
      const double t = v == hot ? 30.0 : -10.0 + 2.0 * normal(rng);
      p.push_back(t);
      q.push_back(v == hot ? t + std::ldexp(1.0, -10) : t);
    }
  });
  add("partial ties: half the columns equal, the rest + N(0, 0.5^2)", [&](int, auto& p, auto& q) {
    for (std::int64_t v = 0; v < V; ++v) {
      const double t = unif(rng);
      p.push_back(t);
      q.push_back(v % 2 ? t : t + 0.5 * normal(rng));
    }
  });
  // One column differs by one unit in the last place of a float (the rest equal): the two sides'
  // masses agree to ~1e-11, below float's resolution, so every chunk's centre but one is exactly 1
  // and the loss (~1e-17) lives in the records' second-order terms.
  add("one column differs by one float ulp", [&](int row, auto& p, auto& q) {
    const std::int64_t at = (V / 5 + 13 * row) % V;
    for (std::int64_t v = 0; v < V; ++v) {
      const double t = static_cast<float>(unif(rng));
      p.push_back(t);
      q.push_back(v == at ? std::nextafter(static_cast<float>(t), 100.0f) : t);
    }
  });
  add("identical distributions, logits shifted by 3", [&](int, auto& p, auto& q) {
    for (std::int64_t v = 0; v < V; ++v) {
      const double t = unif(rng);
      p.push_back(t);
      q.push_back(t + 3.0);
    }
  });
  add("identical rows (exact zero)", [&](int, auto& p, auto& q) {
    for (std::int64_t v = 0; v < V; ++v) {
      const double t = unif(rng);
      p.push_back(t);
      q.push_back(t);
    }
  });
  return out;
}

// The families whose chunks' centres spread over the row (every column differs, or half of them
// by N(0, 0.5^2)): a merge that does not move the records to the merged centre must fail each of
// them (the mutant controls). In the near-identical ones the missing pieces are of second order in
// a tiny spread and may stay inside the bound.
inline std::set<std::string> spread_families() {
  return {"independent uniform [-8, 8)", "teacher N(0, 4^2), student + noise " + std::to_string(1.0),
          "teacher N(0, 4^2), student + noise " + std::to_string(1e-2),
          "partial ties: half the columns equal, the rest + N(0, 0.5^2)"};
}

// Every family at V = 4096 and 1001, f32 and bf16, judged (one line printed per family): the
// records' test proper.
inline void expect_every_family_within_the_bound(DivergenceId id, std::uint64_t seed, RowLoss loss) {
  for (std::int64_t V : {4096, 1001}) {
    for (DType dt : {DType::f32, DType::bf16}) {
      for (const Rows& r : families(V, seed + static_cast<std::uint64_t>(V))) {
        const Verdict v = judge_rows(rows_case(id, r, dt), loss);
        std::printf("  V %-5lld %-4s %-62s centred: %s\n", static_cast<long long>(V), short_name(dt).data(),
                    r.name.c_str(), v.summary().c_str());
        EXPECT_TRUE(v.pass) << r.name << " V " << V << " " << short_name(dt) << ": " << v.summary();
      }
    }
  }
}

// merge(x, y) and merge(y, x) are the same bits for 1000 pairs of chunk records (the warp
// butterfly of the kernels, row_reduce.cuh warp_tree_combine, relies on it: every lane merges its
// record with its partner's and must hold the same result).
template <class Records, auto kMerge>
void expect_merges_symmetric_bit_for_bit() {
  using Record = typename Records::Record;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> unif(-8.0f, 0.0f);
  for (int trial = 0; trial < 1000; ++trial) {
    float ty[2][kChunk], tx[2][kChunk];
    for (auto& side : ty)
      for (float& t : side) t = unif(rng);
    for (auto& side : tx)
      for (float& t : side) t = unif(rng);
    const Record x = Records::chunk(ty[0], tx[0], kChunk), y = Records::chunk(ty[1], tx[1], kChunk);
    const Record xy = kMerge(x, y), yx = kMerge(y, x);
    ASSERT_EQ(std::memcmp(&xy, &yx, sizeof(Record)), 0) << "trial " << trial;
  }
}

// The merge with centres the caller holds (Records::merge_held: the streamed kernel's group loop
// keeps the chunks' and the running record's centres) gives kMerge's bits, and the merged centre
// it hands back is the one Records::centre computes from the merged record: a chain of 64 chunk
// records merged both ways, 200 times.
template <class Records, auto kMerge>
void expect_held_centres_give_the_same_bits() {
  using Record = typename Records::Record;
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<float> unif(-8.0f, 0.0f);
  for (int trial = 0; trial < 200; ++trial) {
    Record plain{}, held{};
    auto c_held = Records::centre(held);
    for (int chunk = 0; chunk < 64; ++chunk) {
      float ty[kChunk], tx[kChunk];
      for (float& t : ty) t = unif(rng);
      for (float& t : tx) t = unif(rng);
      const int n = chunk == 63 ? 5 : kChunk;  // a short last chunk
      const Record part = Records::chunk(ty, tx, n);
      plain = kMerge(plain, part);
      held = Records::merge_held(held, c_held, part, Records::centre(part), c_held);  // (out aliases in)
      {
        const float* pf = reinterpret_cast<const float*>(&plain);
        const float* hf = reinterpret_cast<const float*>(&held);
        std::string fields;
        for (std::size_t f = 0; f < sizeof(Record) / sizeof(float); ++f)
          fields += " " + std::to_string(pf[f]) + "/" + std::to_string(hf[f]);
        ASSERT_EQ(std::memcmp(&plain, &held, sizeof(Record)), 0) << "trial " << trial << " chunk " << chunk << fields;
      }
      const auto recomputed = Records::centre(held);
      ASSERT_EQ(std::memcmp(&c_held, &recomputed, sizeof(c_held)), 0) << "trial " << trial << " chunk " << chunk;
    }
  }
}

// A row of 1001 uniform logits against itself: the loss must be exactly 0.
inline float identical_rows_loss(RowLoss loss) {
  std::vector<float> y(1001);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> unif(-8.0f, 8.0f);
  for (float& v : y) v = unif(rng);
  return loss(y, y);
}

}  // namespace divcheck::centred_test

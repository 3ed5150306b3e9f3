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
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/math/hd.hpp"
#include "properties/verdict.hpp"
#include "reference/reference.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck {
namespace {

using math::JefferysRecord;
constexpr int kChunk = 8;
constexpr int kChunksPerThread = 4;  // the 16-bit streamed kernel's R

struct ThreadPart {
  JefferysRecord rec;
  float my = -INFINITY, mx = -INFINITY;
};

using Merge = JefferysRecord (*)(const JefferysRecord&, const JefferysRecord&);

// The mutant: the sums added as they are, each still centred at its own ratio.
JefferysRecord merge_without_recentring(const JefferysRecord& x, const JefferysRecord& y) {
  return {x.a + y.a, x.b + y.b, x.e + y.e, x.k + y.k};
}

// One row by the centred records (p side y, q side x; tame: finite logits within 64 of the max).
template <Merge kMerge = math::jefferys_merge>
float centred_row_loss(const std::vector<float>& y, const std::vector<float>& x) {
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
      float ey[kChunk] = {}, ex[kChunk] = {}, g[kChunk] = {};
      for (int k = 0; k < kChunk && c0 + k < t1; ++k) {
        const float ty = y[c0 + k] - tp.my, tx = x[c0 + k] - tp.mx;
        ey[k] = math::f_softmax_exp(ty);
        ex[k] = math::f_softmax_exp(tx);
        g[k] = ty - tx;
      }
      tp.rec = kMerge(tp.rec, math::jefferys_chunk_record<kChunk>(ey, ex, g));
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
        return math::jefferys_rescale(p.rec, math::f_softmax_exp(p.my - m.my), math::f_softmax_exp(p.mx - m.mx));
      };
      m.rec = kMerge(moved(parts[i]), moved(parts[i + 1]));
      next.push_back(m);
    }
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return math::jefferys_record_loss(parts[0].rec);
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

struct Rows {
  std::string name;
  std::int64_t V;
  std::vector<double> p, q;  // T rows of V each
};

Case rows_case(const Rows& r, DType dt) {
  // One position per sequence: reduction "none" gives each sequence's mean, here one row's loss.
  const std::int64_t B = static_cast<std::int64_t>(r.p.size()) / r.V;
  Case c = testing_ref::logit_case(DivergenceId::jefferys_divergence, B, 1, r.V, r.p, r.q, dt);
  c.params.reduction = "none";
  c.wants_grad.clear();
  return c;
}

using RowLoss = float (*)(const std::vector<float>&, const std::vector<float>&);

Verdict judge_rows(const Case& c, RowLoss loss) {
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

// The families, 4 rows each, V = 4096 (128 threads of 32 columns) and an odd V for a short last
// chunk and thread.
std::vector<Rows> families(std::int64_t V, std::uint64_t seed) {
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

TEST(JefferysCentred, EveryFamilyIsWithinTheGatesBound) {
  for (std::int64_t V : {4096, 1001}) {
    for (DType dt : {DType::f32, DType::bf16}) {
      for (const Rows& r : families(V, 20261207 + V)) {
        const Case c = rows_case(r, dt);
        const Verdict v = judge_rows(c, centred_row_loss<>);
        std::printf("  V %-5lld %-4s %-62s centred: %s\n", static_cast<long long>(V), short_name(dt).data(),
                    r.name.c_str(), v.summary().c_str());
        EXPECT_TRUE(v.pass) << r.name << " V " << V << " " << short_name(dt) << ": " << v.summary();
      }
    }
  }
}

TEST(JefferysCentred, IdenticalRowsGiveExactlyZero) {
  std::vector<float> y(1001);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> unif(-8.0f, 8.0f);
  for (float& v : y) v = unif(rng);
  EXPECT_EQ(centred_row_loss<>(y, y), 0.0f);
}

TEST(JefferysCentred, TheFamiliesCatchAMergeThatDoesNotRecentre) {
  // The control: without the move to the merged centre the sums miss the pieces (κ − κᵢ) δ bᵢ and
  // the loss is wrong wherever the chunks' ratios differ; the same rows must catch it. The plain
  // one-pass form (the first CUDA version's) is printed beside it: it passes these rows in
  // practice, but its worst-case error is not within the bound for close pairs (docs/analysis/
  // jefferys_one_pass_forward.py), which is why the kernels do not use it.
  // The families whose chunks' ratios κ_c spread over the row (every column differs, or half of
  // them by N(0, 0.5^2)) must catch it; in the near-identical ones (noise 1e-4, a few differing
  // tail columns, shifted or identical rows) the missing pieces (κ − κᵢ) δ bᵢ are of second order
  // in a tiny spread and may stay inside the bound, so they are only printed.
  const std::set<std::string> must_catch = {"independent uniform [-8, 8)",
                                            "teacher N(0, 4^2), student + noise " + std::to_string(1.0),
                                            "teacher N(0, 4^2), student + noise " + std::to_string(1e-2),
                                            "partial ties: half the columns equal, the rest + N(0, 0.5^2)"};
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

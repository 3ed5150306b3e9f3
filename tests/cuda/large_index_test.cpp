// 64-bit indexing: B*T*V = 9000 * 256000 = 2.304e9 elements > 2^31 (and bf16 byte offsets
// > 2^32). Row 8388 straddles element 2^31; rows beyond it are addressed only with 64-bit
// offsets. Inputs are bf16 (4.6 GB per tensor; about 19 GB of host and of device memory).
//   * tvd_prob: the whole result is compared bitwise with the CPU backend (both compute the
//     same exact IEEE operations in the same order).
//   * jefferys_divergence, reduction "none" (position b's loss and gradient rows depend on that
//     position alone): sampled rows are judged against the float128 reference of a case made
//     of just those rows, and compared with the CPU backend on it; then the same case forward only
//     (the streamed kernel of the centred records), its sampled losses judged likewise.
#include <cstring>
#include <thread>
#include <vector>

#include "tests/cuda/gpu_test_support.hpp"

namespace divcheck::gputest {
namespace {

using GpuLargeIndex = GpuTest;

constexpr std::int64_t kRows = 9000, kVocab = 256000;

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Fills a bf16 tensor with f(i) in parallel (f returns a float; rounded to bf16 once).
template <class F>
void fill_bf16(Tensor& t, F&& f) {
  const std::int64_t n = t.numel();
  const unsigned workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      const std::int64_t lo = n * w / workers, hi = n * (w + 1) / workers;
      for (std::int64_t i = lo; i < hi; ++i) t.set_bits16(i, float_to_bf16(f(i)));
    });
  for (auto& th : pool) th.join();
}

float uniform(std::uint64_t seed, std::int64_t i) {  // in [0, 1)
  return static_cast<float>(mix(seed ^ static_cast<std::uint64_t>(i)) >> 40) * 0x1p-24f;
}

TEST_F(GpuLargeIndex, TvdProbBitwiseEqualToCpuBeyond2To31Elements) {
  Case c;
  c.id = DivergenceId::tvd_prob;
  c.params.reduction = "sum";
  Tensor p(DType::bf16, {kRows, kVocab}), q(DType::bf16, {kRows, kVocab});
  fill_bf16(p, [](std::int64_t i) { return uniform(1, i) * 1e-5f; });
  // q == p at every 7th element (ties: gradient 0), elsewhere independent.
  fill_bf16(q, [](std::int64_t i) { return i % 7 == 0 ? uniform(1, i) * 1e-5f : uniform(2, i) * 1e-5f; });
  Tensor labels(DType::i64, {kRows});
  for (std::int64_t i = 0; i < kRows; ++i) labels.set(i, (i == 3 || i == 8500) ? -100.0 : 1.0);
  c.inputs["p"] = std::move(p);
  c.inputs["q"] = std::move(q);
  c.inputs["labels"] = std::move(labels);
  c.wants_grad = {"p"};
  c.grad_output = Tensor::scalar_f32(0.5f);
  const Outputs g = compute(gpu(), c);
  const Outputs h = compute(cpu(), c);
  EXPECT_TRUE(bitwise_same(g, h));
}

TEST_F(GpuLargeIndex, LogitRowsJudgedOnSampledRowsBeyond2To31Elements) {
  const DivergenceId id = DivergenceId::jefferys_divergence;
  Case c;
  c.id = id;
  c.params.reduction = "none";
  Tensor y(DType::bf16, {kRows, 1, kVocab}), x(DType::bf16, {kRows, 1, kVocab});
  fill_bf16(y, [](std::int64_t i) { return 6.0f * uniform(3, i) - 3.0f; });
  fill_bf16(x, [](std::int64_t i) { return 6.0f * uniform(4, i) - 3.0f; });
  Tensor mask(DType::u8, {kRows, 1});
  for (std::int64_t b = 0; b < kRows; ++b) mask.set(b, b == 8997 ? 0.0 : 1.0);
  c.inputs["clean_logits"] = std::move(y);
  c.inputs["noisy_logits"] = std::move(x);
  c.inputs["attention_mask"] = std::move(mask);
  c.wants_grad = {"noisy_logits", "clean_logits"};
  c.grad_output = Tensor(DType::f32, {kRows});
  for (std::int64_t b = 0; b < kRows; ++b) c.grad_output.set(b, 0.25 + 0.001 * static_cast<double>(b % 97));
  const Outputs g = compute(gpu(), c);

  // Rows before, across and after element 2^31 (8388 * 256000 < 2^31 < 8389 * 256000).
  const std::vector<std::int64_t> sample = {0, 8388, 8389, 8997, 8999};
  const auto k = static_cast<std::int64_t>(sample.size());
  Case s;
  s.id = id;
  s.params.reduction = "none";
  s.wants_grad = c.wants_grad;
  s.grad_output = Tensor(DType::f32, {k});
  Outputs gs;
  gs.loss = Tensor(DType::f32, {k});
  for (const char* role : {"clean_logits", "noisy_logits"}) {
    s.inputs[role] = Tensor(DType::bf16, {k, 1, kVocab});
    gs.grads[role] = Tensor(DType::bf16, {k, 1, kVocab});
  }
  s.inputs["attention_mask"] = Tensor(DType::u8, {k, 1});
  const std::size_t row_bytes = static_cast<std::size_t>(kVocab) * 2;
  for (std::int64_t j = 0; j < k; ++j) {
    const std::int64_t b = sample[static_cast<std::size_t>(j)];
    for (const char* role : {"clean_logits", "noisy_logits"}) {
      std::memcpy(s.inputs[role].data() + j * row_bytes, c.inputs.at(role).data() + b * row_bytes, row_bytes);
      std::memcpy(gs.grads[role].data() + j * row_bytes, g.grads.at(role).data() + b * row_bytes, row_bytes);
    }
    s.inputs["attention_mask"].set(j, c.inputs.at("attention_mask").get(b));
    s.grad_output.set(j, c.grad_output.get(b));
    gs.loss.set(j, g.loss.get(b));
  }
  const Expected e = compute_reference(s);
  EXPECT_TRUE(gpu_passes(gs, s, e));
  const Agreement a = compare_backends(s, gs, compute(cpu(), s), e);
  EXPECT_EQ(a.first_problem, "");

  // The same rows forward only: the streamed kernel of the centred records (bench/RESULTS.md step
  // 79; each tile addresses its row from a 64-bit offset), its losses judged on the sampled rows.
  c.wants_grad.clear();
  c.grad_output = Tensor();
  ASSERT_TRUE(cuda::plan_for_case(c, cuda::CudaOptions{}).streamed);
  const Outputs f = compute(gpu(), c);
  s.wants_grad.clear();
  s.grad_output = Tensor();
  Outputs fs;
  fs.loss = Tensor(DType::f32, {k});
  for (std::int64_t j = 0; j < k; ++j) fs.loss.set(j, f.loss.get(sample[static_cast<std::size_t>(j)]));
  EXPECT_TRUE(gpu_passes(fs, s, compute_reference(s))) << "forward only";
}

}  // namespace
}  // namespace divcheck::gputest

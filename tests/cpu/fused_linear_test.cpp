// fused_linear_masked_kl_divergence equals "project, then the masked KL math", and does not
// depend on chunk_size.
//
// Exactness: hidden states and W hold multiples of 1/8 in [-1, 1] and H = 5, so every product
// is a multiple of 1/64 of magnitude <= 1 and every dot product (<= 5 in magnitude) is exact in
// float32, whatever the summation order; T = 2 divides exactly. The projected logits z are
// therefore exact f32 values, and the explicit path (masked_kl_divergence on z for
// sequence_mean, temperature_scaled_masked_kl_divergence at T = 1 for token_mean) runs the same
// row kernel on the same values: the loss must be bitwise equal. Its logit gradient G, times
// 1/T = 1/2 (exact), is the fused path's per-token gradient; the test forms
// grad_h = G W and grad_W = sum_tokens G^T h in double and bounds the float32 path by
// (sigma + 1) u sum |terms|: one rounding per product plus a sum of depth sigma(V) (lane order,
// sigma = ceil(V/1024) + 16) for grad_h, and of depth n_tokens (sequential) for grad_W, plus
// the final rounding of a bf16/f16 gradient.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/backend.hpp"
#include "tests/cpu/test_cases.hpp"

namespace divcheck::testing {
namespace {

const double kU = std::ldexp(1.0, -24);

// The error of rounding x once to a bf16/f16 output: u_out |x|, or half a subnormal step when
// x is below the normal range (bounded here by the smallest subnormal).
double final_rounding(DType dt, double x) {
  return dt == DType::f32 ? 0.0 : unit_roundoff(dt) * std::fabs(x) + min_subnormal(dt);
}

std::vector<double> eighths(std::size_t n, std::uint64_t seed) {
  std::vector<double> r = randn(n, seed);
  for (auto& x : r) x = std::clamp(std::round(x * 4.0), -8.0, 8.0) / 8.0;
  return r;
}

struct FusedSetup {
  std::int64_t B = 2, T = 5, H = 5, V = 9;
  std::vector<double> hs, ht, w;
  std::vector<int> mask{1, 1, 0, 1, 1, 1, 0, 1, 1, 0};  // 7 valid tokens: not a multiple of 3
};

FusedSetup make_setup(std::uint64_t seed) {
  FusedSetup s;
  s.hs = eighths(static_cast<std::size_t>(s.B * s.T * s.H), seed);
  s.ht = eighths(static_cast<std::size_t>(s.B * s.T * s.H), seed + 1);
  s.w = eighths(static_cast<std::size_t>(s.V * s.H), seed + 2);
  return s;
}

Case fused_case(const FusedSetup& s, DType dt, double beta, const std::string& reduction, std::int64_t chunk) {
  Case c;
  c.id = DivergenceId::fused_linear_masked_kl_divergence;
  c.inputs["student_hidden"] = make_tensor(dt, {s.B, s.T, s.H}, s.hs);
  c.inputs["teacher_hidden"] = make_tensor(dt, {s.B, s.T, s.H}, s.ht);
  c.inputs["lm_head_weight"] = make_tensor(dt, {s.V, s.H}, s.w);
  c.inputs["attention_mask"] = make_mask({s.B, s.T}, s.mask);
  c.params.jsd_beta = beta;
  c.params.temperature = 2.0;
  c.params.reduction = reduction;
  c.params.chunk_size = chunk;
  want_all_grads(c, 1.25);
  return c;
}

// z = h W^T / 2 in double (exact here), (B*T*V).
std::vector<double> project(const FusedSetup& s, const std::vector<double>& h) {
  std::vector<double> z(static_cast<std::size_t>(s.B * s.T * s.V));
  for (std::int64_t i = 0; i < s.B * s.T; ++i)
    for (std::int64_t v = 0; v < s.V; ++v) {
      double a = 0;
      for (std::int64_t k = 0; k < s.H; ++k) a += h[i * s.H + k] * s.w[v * s.H + k];
      z[i * s.V + v] = a / 2.0;
    }
  return z;
}

void check_against_explicit(DType dt, double beta, const std::string& reduction, std::int64_t chunk) {
  const FusedSetup s = make_setup(3);
  const Case fused = fused_case(s, dt, beta, reduction, chunk);
  const Outputs of = compute(*make_cpu_backend(), fused);
  const std::string what = std::string(short_name(dt)) + " jsd_beta " + std::to_string(beta) + " " + reduction +
                           " chunk " + std::to_string(chunk);
  // Explicit: student logits zs, teacher logits zt; jsd_beta 0 is KL(pt||ps) (teacher = p
  // side), jsd_beta 1 is KL(ps||pt) (student = p side).
  const std::vector<double> zs = project(s, s.hs), zt = project(s, s.ht);
  const bool seq = reduction == "sequence_mean";
  Case e;
  e.id = seq ? DivergenceId::masked_kl_divergence : DivergenceId::temperature_scaled_masked_kl_divergence;
  const std::vector<double>& p_side = beta == 0.0 ? zt : zs;
  const std::vector<double>& q_side = beta == 0.0 ? zs : zt;
  e.inputs[p_role(e.id)] = make_tensor(DType::f32, {s.B, s.T, s.V}, p_side);
  e.inputs[q_role(e.id)] = make_tensor(DType::f32, {s.B, s.T, s.V}, q_side);
  e.inputs[mask_role(e.id)] = make_mask({s.B, s.T}, s.mask);
  const std::string student_role = beta == 0.0 ? q_role(e.id) : p_role(e.id);
  e.wants_grad = {student_role};
  e.grad_output = Tensor::scalar_f32(1.25f);
  const Outputs oe = compute(*make_cpu_backend(), e);
  EXPECT_TRUE(of.loss.bitwise_equal(oe.loss)) << what << ": " << of.loss.get(0) << " vs " << oe.loss.get(0);

  // Gradients through the projection, in double from the explicit logit gradient.
  const Tensor& G = oe.grads.at(student_role);
  const std::int64_t sigma_v = (s.V + 1023) / 1024 + 16, tokens = 7;
  const Tensor& gh = of.grads.at("student_hidden");
  for (std::int64_t i = 0; i < s.B * s.T; ++i)
    for (std::int64_t k = 0; k < s.H; ++k) {
      double sum = 0, mag = 0;
      for (std::int64_t v = 0; v < s.V; ++v) {
        const double t = G.get(i * s.V + v) / 2.0 * s.w[v * s.H + k];
        sum += t;
        mag += std::fabs(t);
      }
      EXPECT_NEAR(gh.get(i * s.H + k), sum, (sigma_v + 1) * kU * mag + final_rounding(dt, sum)) << what << " grad_h";
    }
  const Tensor& gw = of.grads.at("lm_head_weight");
  for (std::int64_t v = 0; v < s.V; ++v)
    for (std::int64_t k = 0; k < s.H; ++k) {
      double sum = 0, mag = 0;
      for (std::int64_t i = 0; i < s.B * s.T; ++i) {
        const double t = G.get(i * s.V + v) / 2.0 * s.hs[i * s.H + k];
        sum += t;
        mag += std::fabs(t);
      }
      EXPECT_NEAR(gw.get(v * s.H + k), sum, (tokens + 1) * kU * mag + final_rounding(dt, sum)) << what << " grad_W";
    }
}

TEST(CpuFusedLinear, EqualsExplicitProjectionThenKl) {
  for (DType dt : {DType::f32, DType::bf16, DType::f16})
    for (double beta : {0.0, 1.0})
      for (std::string reduction : {"sequence_mean", "token_mean"})
        for (std::int64_t chunk : {1, 3, 1024})  // 7 valid tokens: 7 x 1, 3 + 3 + 1, one chunk
          check_against_explicit(dt, beta, reduction, chunk);
}

TEST(CpuFusedLinear, ChunkSizeDoesNotChangeAnyBit) {
  for (DType dt : {DType::f32, DType::bf16})
    for (double beta : {0.0, 1.0}) {
      FusedSetup s = make_setup(9);
      s.hs = randn(s.hs.size(), 21);  // general values: the projection rounds now
      s.ht = randn(s.ht.size(), 22);
      s.w = randn(s.w.size(), 23);
      const Outputs ref = compute(*make_cpu_backend(), fused_case(s, dt, beta, "sequence_mean", 1024));
      for (std::int64_t chunk : {1, 3, 7, 8}) {
        const Outputs o = compute(*make_cpu_backend(), fused_case(s, dt, beta, "sequence_mean", chunk));
        EXPECT_TRUE(o.loss.bitwise_equal(ref.loss)) << "chunk " << chunk;
        for (const auto& [role, g] : o.grads) EXPECT_TRUE(g.bitwise_equal(ref.grads.at(role))) << "chunk " << chunk << " " << role;
      }
    }
}

TEST(CpuFusedLinear, WithoutMaskEveryTokenIsValid) {
  const FusedSetup s = make_setup(4);
  Case with = fused_case(s, DType::f32, 0.0, "token_mean", 4);
  with.inputs["attention_mask"] = ones_mask({s.B, s.T});
  Case without = with;
  without.inputs.erase("attention_mask");
  const Outputs a = compute(*make_cpu_backend(), with), b = compute(*make_cpu_backend(), without);
  EXPECT_TRUE(a.loss.bitwise_equal(b.loss));
  for (const auto& [role, g] : a.grads) EXPECT_TRUE(g.bitwise_equal(b.grads.at(role))) << role;
}

}  // namespace
}  // namespace divcheck::testing

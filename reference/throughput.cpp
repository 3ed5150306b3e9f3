// measure_reference_throughput(): builds one deterministic case and times compute_reference.
#include "reference/throughput.hpp"

#include <chrono>
#include <ctime>
#include <cmath>
#include <random>
#include <string>

#include "core/errors.hpp"

namespace divcheck {

ReferenceThroughput measure_reference_throughput(DivergenceId id, std::int64_t rows, std::int64_t vocab,
                                                 Precision precision, int repeats) {
  const DivergenceInfo& d = info(id);
  if (id == DivergenceId::fused_linear_masked_kl_divergence || id == DivergenceId::masked_unbiased_dcor)
    throw InvalidArgument("divergence", std::string(d.name), "throughput is measured for logit rows and tvd_prob");
  if (rows < 1) throw InvalidArgument("rows", std::to_string(rows), "must be >= 1");
  if (vocab < 1) throw InvalidArgument("vocab", std::to_string(vocab), "must be >= 1");
  if (repeats < 1) throw InvalidArgument("repeats", std::to_string(repeats), "must be >= 1");

  std::mt19937_64 rng(0x5eedULL + static_cast<unsigned>(id));
  std::normal_distribution<float> normal(0.0f, 3.0f);
  Case c;
  c.id = id;
  c.params.reduction = std::string(d.default_reduction);
  if (d.reductions.empty()) c.params.reduction.clear();
  if (id == DivergenceId::masked_jefferys_divergence) c.params.log_target = false;
  for (const RoleSpec& r : d.roles) {
    const std::string name(r.name);
    if (r.kind == RoleKind::logits) {
      Tensor t(DType::f32, {1, rows, vocab});
      for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, normal(rng));
      c.inputs[name] = std::move(t);
    } else if (r.kind == RoleKind::probabilities) {
      Tensor t(DType::f32, {rows, vocab});
      for (std::int64_t n = 0; n < rows; ++n) {
        double s = 0.0;
        std::vector<double> e(static_cast<std::size_t>(vocab));
        for (auto& x : e) s += (x = std::exp(normal(rng)));
        for (std::int64_t v = 0; v < vocab; ++v) t.set(n * vocab + v, e[v] / s);
      }
      c.inputs[name] = std::move(t);
    } else if (r.kind == RoleKind::position_mask && !r.optional) {
      Tensor t(DType::i64, {1, rows});
      for (std::int64_t i = 0; i < rows; ++i) t.set(i, 1.0);
      c.inputs[name] = std::move(t);
    }
    if (r.differentiable) c.wants_grad.push_back(name);
  }
  c.grad_output = Tensor::scalar_f32(1.0f);

  ReferenceThroughput out;
  out.elements = rows * vocab;
  out.repeats = repeats;
  auto thread_cpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  const double c0 = thread_cpu();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) (void)compute_reference(c, precision);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.cpu_seconds = thread_cpu() - c0;
  const double n = static_cast<double>(out.elements) * repeats;
  out.elements_per_second = n / out.seconds;
  out.elements_per_cpu_second = out.cpu_seconds > 0.0 ? n / out.cpu_seconds : 0.0;
  return out;
}

}  // namespace divcheck

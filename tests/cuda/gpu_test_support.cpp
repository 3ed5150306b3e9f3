// Shared pieces of the GPU tests (see gpu_test_support.hpp).
#include "tests/cuda/gpu_test_support.hpp"

#include <cmath>
#include <sstream>

#include "core/errors.hpp"
#include "properties/case_show.hpp"
#include "properties/tolerance_model.hpp"

namespace divcheck::gputest {

void GpuTest::SetUp() {
  if (!cuda_device_present()) {
    std::string why = "no CUDA device visible";
    try {
      (void)make_cuda_backend();
    } catch (const Unavailable& e) {
      why = e.what();
    }
    GTEST_SKIP() << why;
  }
  gpu_ = make_cuda_backend();
  cpu_ = make_cpu_backend();
}

std::vector<DivergenceId> gpu_rows() {
  std::vector<DivergenceId> v;
  for (const auto& d : registry())
    if (cuda::cuda_supports(d.id)) v.push_back(d.id);
  return v;
}

namespace {

DType float_dtype_of(const Case& c) {
  for (const auto& [role, t] : c.inputs)
    if (is_floating(t.dtype())) return t.dtype();
  return DType::f32;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace

std::string label(const Case& c) {
  std::ostringstream os;
  os << name_of(c.id) << " " << short_name(float_dtype_of(c));
  if (!c.provenance.family.empty()) os << " family " << c.provenance.family << " seed " << c.provenance.seed;
  return os.str();
}

::testing::AssertionResult gpu_passes(const Outputs& got, const Case& c, const Expected& e) {
  const Verdict v = judge(c, got, e);
  if (v.pass) return ::testing::AssertionSuccess() << v.summary();
  return ::testing::AssertionFailure() << label(c) << ": " << v.summary() << "\n" << describe_case(c, 48);
}

::testing::AssertionResult gpu_passes(const Backend& gpu, const Case& c) {
  Outputs got;
  try {
    got = compute(gpu, c);
  } catch (const std::exception& ex) {
    return ::testing::AssertionFailure() << label(c) << ": the cuda backend threw: " << ex.what();
  }
  return gpu_passes(got, c, compute_reference(c));
}

namespace {

void compare_tensor(const std::string& name, const Tensor& g, const Tensor& h, const ExpectedTensor& e, double c,
                    double sigma, Agreement& a) {
  if (g.shape() != h.shape() || g.dtype() != h.dtype() || g.numel() != e.numel()) {
    if (a.first_problem.empty()) a.first_problem = name + ": shapes or dtypes differ";
    return;
  }
  const BoundInputs bi{c, sigma, e.dtype};
  for (std::int64_t i = 0; i < g.numel(); ++i) {
    const double x = g.get(i), y = h.get(i);
    ++a.elements;
    if (same_value(x, y)) {
      ++a.bitwise_equal;
      continue;
    }
    std::string problem;
    const auto k = static_cast<std::size_t>(i);
    if (std::isnan(x) || std::isnan(y)) problem = "NaN in one backend only";
    else if (e.exact_zero[k] && (x != 0.0 || y != 0.0)) problem = "an exact zero is not zero in both";
    else if (std::isinf(x) || std::isinf(y)) problem = "an infinity in one backend only";
    else {
      const double bound = element_bound(bi, e.scale[k], e.jump[k], e.value[k]);
      const double ratio = std::fabs(x - y) / (2.0 * bound);
      a.worst = std::max(a.worst, ratio);
      if (!(ratio <= 1.0)) problem = "further apart than the two verdict bounds";
    }
    if (!problem.empty() && a.first_problem.empty()) {
      std::ostringstream os;
      os.precision(9);
      os << name << "[" << i << "]: gpu " << x << ", cpu " << y << ", reference " << e.value[k] << ": " << problem;
      a.first_problem = os.str();
    }
  }
}

}  // namespace

Agreement compare_backends(const Case& c, const Outputs& gpu, const Outputs& cpu, const Expected& e) {
  const DivergenceInfo& d = info(c.id);
  const CaseSigmas sig = case_sigmas(c);
  Agreement a;
  compare_tensor("loss", gpu.loss, cpu.loss, e.loss, d.tolerance.loss_c, sig.loss, a);
  for (const auto& [role, exp] : e.grads) {
    auto g = gpu.grads.find(role), h = cpu.grads.find(role);
    if (g == gpu.grads.end() || h == cpu.grads.end()) {
      if (a.first_problem.empty()) a.first_problem = "gradient " + role + " missing";
      continue;
    }
    compare_tensor("grad " + role, g->second, h->second, exp, d.tolerance.grad_c, sig.grads.at(role), a);
  }
  return a;
}

::testing::AssertionResult bitwise_same(const Outputs& a, const Outputs& b) {
  auto same = [](const Tensor& x, const Tensor& y, const std::string& name) -> std::string {
    if (x.shape() != y.shape() || x.dtype() != y.dtype()) return name + ": shape or dtype differs";
    for (std::int64_t i = 0; i < x.numel(); ++i)
      if (!same_value(x.get(i), y.get(i))) {
        std::ostringstream os;
        os.precision(9);
        os << name << "[" << i << "]: " << x.get(i) << " vs " << y.get(i);
        return os.str();
      }
    return "";
  };
  std::string why = same(a.loss, b.loss, "loss");
  if (why.empty() && a.grads.size() != b.grads.size()) why = "different gradient sets";
  for (const auto& [role, g] : a.grads) {
    if (!why.empty()) break;
    auto it = b.grads.find(role);
    why = it == b.grads.end() ? "gradient " + role + " missing" : same(g, it->second, "grad " + role);
  }
  if (why.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why;
}

}  // namespace divcheck::gputest

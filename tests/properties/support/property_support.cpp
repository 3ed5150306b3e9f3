// Implementation of the property-suite helpers (see property_support.hpp).
#include "support/property_support.hpp"

#include <cmath>
#include <sstream>

#include "properties/gen_primitives.hpp"
#include "properties/tolerance_model.hpp"
#include "kernels/math/softmax.hpp"

namespace divcheck {
void PrintTo(DivergenceId id, std::ostream* os) { *os << name_of(id); }
}  // namespace divcheck

namespace divcheck::props {

std::vector<DivergenceId> rows_where(const std::function<bool(const DivergenceInfo&)>& pred) {
  std::vector<DivergenceId> out;
  for (const auto& d : registry())
    if (pred(d)) out.push_back(d.id);
  return out;
}

std::vector<std::string> families_of(DivergenceId id, const std::function<bool(std::string_view)>& family_pred) {
  std::vector<std::string> out;
  for (const auto& f : families(id))
    if (family_pred(f.name)) out.emplace_back(f.name);
  return out;
}

std::vector<RowFamily> row_families(const std::function<bool(const DivergenceInfo&)>& pred,
                                    const std::function<bool(std::string_view)>& family_pred) {
  std::vector<RowFamily> out;
  for (auto id : rows_where(pred))
    for (auto& f : families_of(id, family_pred)) out.push_back({id, f});
  return out;
}

void PrintTo(const RowFamily& rf, std::ostream* os) { *os << name_of(rf.id) << "/" << rf.family; }

std::string row_test_name(const ::testing::TestParamInfo<DivergenceId>& p) { return std::string(name_of(p.param)); }

std::string row_family_test_name(const ::testing::TestParamInfo<RowFamily>& p) {
  return std::string(name_of(p.param.id)) + "__" + p.param.family;
}

bool is_nan_family(std::string_view f) { return f == "nan_rows" || f == "nan_samples" || f == "nan_elements"; }

rc::Gen<Case> gen_case_of(DivergenceId id, const std::function<bool(std::string_view)>& family_pred) {
  std::vector<rc::Gen<Case>> gens;
  for (const auto& f : families_of(id, family_pred)) gens.push_back(gen_case(id, f));
  if (gens.empty()) throw std::logic_error("gen_case_of: no family of " + std::string(name_of(id)) + " is accepted");
  // pgen::int_toward does not depend on the size (rc::gen::inRange would pick family 0 at size 0).
  return rc::gen::mapcat(rc::gen::noShrink(pgen::int_toward(0, static_cast<std::int64_t>(gens.size()) - 1, 0)),
                         [gens](std::int64_t k) { return gens[static_cast<std::size_t>(k)]; });
}

const Backend& cpu() {
  static const std::unique_ptr<Backend> b = make_cpu_backend();
  return *b;
}

Outputs run_cpu(const Case& c) { return compute(cpu(), c); }

Expected reference_of(const Case& c) { return compute_reference(c, Precision::float128); }

namespace {

std::vector<double> tensor_bounds(const ExpectedTensor& e, double c, double sigma) {
  std::vector<double> b(static_cast<std::size_t>(e.numel()));
  const BoundInputs bi{c, sigma, e.dtype};
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = element_bound(bi, e.scale[i], e.jump[i], e.value[i]);
  return b;
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace

Bounds bounds_of(const Case& c, const Expected& e) {
  const DivergenceInfo& d = info(c.id);
  const CaseSigmas s = case_sigmas(c);
  Bounds b;
  b.loss = tensor_bounds(e.loss, d.tolerance.loss_c, s.loss);
  for (const auto& [role, t] : e.grads) b.grads[role] = tensor_bounds(t, d.tolerance.grad_c, s.grads.at(role));
  return b;
}

std::string compare_within(const Tensor& a, const Tensor& b, const std::vector<double>& bound, const std::string& what) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    return what + ": shapes/dtypes differ " + shape_string(a.shape()) + " vs " + shape_string(b.shape());
  if (static_cast<std::int64_t>(bound.size()) != a.numel()) return what + ": bound has the wrong size";
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get(i), y = b.get(i), bd = bound[static_cast<std::size_t>(i)];
    bool ok;
    if (std::isnan(x) || std::isnan(y)) ok = std::isnan(x) && std::isnan(y);
    else if (std::isinf(x) || std::isinf(y)) ok = x == y;
    else ok = std::fabs(x - y) <= bd;
    if (!ok)
      return what + ": element " + std::to_string(i) + ": " + fmt(x) + " vs " + fmt(y) + " (|diff| " + fmt(std::fabs(x - y)) +
             " > bound " + fmt(bd) + ")";
  }
  return {};
}

std::string compare_bitwise(const Tensor& a, const Tensor& b, const std::string& what) {
  if (a.bitwise_equal(b)) return {};
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return what + ": shapes/dtypes differ";
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get(i), y = b.get(i);
    if (!(x == y || (std::isnan(x) && std::isnan(y))) || std::signbit(x) != std::signbit(y))
      return what + ": not bitwise equal at element " + std::to_string(i) + ": " + fmt(x) + " vs " + fmt(y);
  }
  return what + ": not bitwise equal (NaN payloads differ)";
}

void assert_empty(const std::string& message, const Case& c) {
  if (!message.empty()) RC_FAIL(message + "\n" + describe_case(c));
}

DType input_dtype(const Case& c) {
  for (const auto& r : info(c.id).roles)
    if (r.kind != RoleKind::position_mask && r.kind != RoleKind::support_mask && r.kind != RoleKind::labels)
      if (const Tensor* t = c.input(std::string(r.name))) return t->dtype();
  return DType::f32;
}

void tag_case(const Case& c) {
  std::string bucket;
  if (c.id == DivergenceId::masked_unbiased_dcor) {
    const Tensor& m = c.inputs.at("attention_mask");
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < m.numel(); ++i) n += m.nonzero(i);
    bucket = n < 4 ? "N<4" : (n == 4 ? "N=4" : (n <= 16 ? "N<=16" : "N>16"));
  } else {
    std::int64_t v = 0;
    if (c.id == DivergenceId::fused_linear_masked_kl_divergence) v = c.inputs.at("lm_head_weight").dim(0);
    else if (c.id == DivergenceId::tvd_prob) v = c.inputs.at("p").dim(1);
    else v = c.inputs.at(std::string(info(c.id).roles.front().name)).dim(2);
    bucket = v == 1 ? "V=1" : v <= 8 ? "V<=8" : v <= 128 ? "V<=128" : v <= 1025 ? "V<=1025" : v <= 4099 ? "V=4099" : "V>=32000";
  }
  // The temperature rows: which form of T the CUDA kernels take on the plain path (T = 1; T = 2^k,
  // the multiplying kernels of RowPaths::plain_pow2_t; another T with a normal reciprocal, the
  // product by 1/T of plain_recip_t; any other T, the dividing ones of plain_scaled_t), so the
  // output shows that the generators reach all four.
  if (info(c.id).accepts(ParamKind::temperature)) {
    const auto t = static_cast<float>(c.params.temperature);
    math::PowerOfTwoTemperature pow2{};
    bucket += t == 1.0f                                  ? " T=1"
              : math::power_of_two_temperature(t, pow2) ? " T=2^k"
              : math::reciprocal_temperature_is_normal(t) ? " T by 1/T"
                                                          : " T divided";
  }
  // near_one_hot's rows with the hot column alone in the support (p and q agree there below
  // float32's precision: the noisy products of docs/tolerances.md).
  if (hot_column_alone_rows(c) > 0) bucket += " hot column alone";
  RC_TAG(c.provenance.family, std::string(short_name(input_dtype(c))), bucket,
         c.wants_grad.empty() ? "loss only" : "with gradients");
}

}  // namespace divcheck::props

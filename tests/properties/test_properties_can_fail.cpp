// Tests of the tests: every property of the suite, for every row it is instantiated for, must
// FAIL against a backend that is wrong in the way the property is about (a mutant of the CPU
// backend). A property that passes its mutant could never fail, and is a defect.
//
// Mutants (each wraps the CPU backend and changes its outputs):
//   first_value_leak  loss += 1e-3 (x0 + 2 y0 + 3 w0), x0 / y0 / w0 the first element of the
//                     first / second / third float input: breaks agreement, symmetry, shift,
//                     permutation, mask invariance (when position 0 is masked) and the dcor
//                     invariances.
//   tiny_offset       every loss and gradient element + 1e-6: breaks exact zeros.
//   nan_swallow       NaN outputs replaced by 0: breaks NaN agreement.
//   negative_loss     loss -> -|loss| - 1e-3 (for bounded rows: loss + 2): breaks the bounds.
//   grad_row_offset   every gradient element + 1e-3: breaks "gradient rows sum to 0".
//   none_scaled       reduction "none" outputs * 1.001: breaks "none averages to mean".
//   log_target_drift  log_target = False: loss * 1.001: breaks "both paths agree".
//   fused_grad_scale  fused-linear student_hidden gradient * 1.01: breaks project-then-divergence.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <sstream>

#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {
namespace {

class Mutant final : public Backend {
 public:
  using Mutation = std::function<void(const Case&, Outputs&)>;
  Mutant(std::string name, Mutation m) : name_(std::move(name)), m_(std::move(m)) {}
  std::string_view name() const override { return name_; }
  Outputs run(const Case& c) const override {
    Outputs o = cpu().run(c);
    m_(c, o);
    return o;
  }

 private:
  std::string name_;
  Mutation m_;
};

void add_all(Tensor& t, double d) {
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, t.get(i) + d);
}

// The first element of the k-th float input role (in registry order), 0 if absent.
double first_value(const Case& c, int k) {
  int seen = 0;
  for (const auto& r : info(c.id).roles) {
    const Tensor* t = c.input(std::string(r.name));
    if (!t || !is_floating(t->dtype())) continue;
    if (seen++ == k) return std::isfinite(t->get(0)) ? t->get(0) : 0.0;
  }
  return 0.0;
}

const Mutant& mutant(const std::string& name) {
  static const std::map<std::string, Mutant> all = [] {
    std::map<std::string, Mutant> m;
    m.emplace("first_value_leak", Mutant("first_value_leak", [](const Case& c, Outputs& o) {
                add_all(o.loss, 1e-3 * (first_value(c, 0) + 2.0 * first_value(c, 1) + 3.0 * first_value(c, 2)));
              }));
    m.emplace("tiny_offset", Mutant("tiny_offset", [](const Case&, Outputs& o) {
                add_all(o.loss, 1e-6);
                for (auto& [r, g] : o.grads) add_all(g, 1e-6);
              }));
    m.emplace("nan_swallow", Mutant("nan_swallow", [](const Case&, Outputs& o) {
                auto fix = [](Tensor& t) {
                  for (std::int64_t i = 0; i < t.numel(); ++i)
                    if (std::isnan(t.get(i))) t.set(i, 0.0);
                };
                fix(o.loss);
                for (auto& [r, g] : o.grads) fix(g);
              }));
    m.emplace("negative_loss", Mutant("negative_loss", [](const Case& c, Outputs& o) {
                const bool bounded = info(c.id).props.upper_bound.has_value();
                for (std::int64_t i = 0; i < o.loss.numel(); ++i)
                  o.loss.set(i, bounded ? o.loss.get(i) + 2.0 : -std::fabs(o.loss.get(i)) - 1e-3);
              }));
    m.emplace("grad_row_offset", Mutant("grad_row_offset", [](const Case&, Outputs& o) {
                for (auto& [r, g] : o.grads) add_all(g, 1e-3);
              }));
    m.emplace("none_scaled", Mutant("none_scaled", [](const Case& c, Outputs& o) {
                if (c.params.reduction != "none") return;
                for (std::int64_t i = 0; i < o.loss.numel(); ++i) o.loss.set(i, o.loss.get(i) * 1.001);
              }));
    m.emplace("log_target_drift", Mutant("log_target_drift", [](const Case& c, Outputs& o) {
                if (!c.params.log_target) o.loss.set(0, o.loss.get(0) * 1.001);
              }));
    m.emplace("fused_grad_scale", Mutant("fused_grad_scale", [](const Case&, Outputs& o) {
                auto it = o.grads.find("student_hidden");
                if (it == o.grads.end()) return;
                for (std::int64_t i = 0; i < it->second.numel(); ++i) it->second.set(i, it->second.get(i) * 1.01);
              }));
    return m;
  }();
  return all.at(name);
}

// Runs a property body under rc::check with its output captured; true when it passed.
bool passes(const std::string& what, const std::function<void()>& body) {
  std::ostringstream sink;
  std::streambuf* old = std::cerr.rdbuf(sink.rdbuf());
  std::streambuf* old_out = std::cout.rdbuf(sink.rdbuf());
  const bool ok = rc::check(what, body);
  std::cerr.rdbuf(old);
  std::cout.rdbuf(old_out);
  return ok;
}

struct Target {
  std::string property;
  DivergenceId id;
  std::string family;  // for the per-family properties
};
void PrintTo(const Target& t, std::ostream* os) { *os << t.property << "/" << name_of(t.id) << "/" << t.family; }

std::vector<Target> targets() {
  std::vector<Target> t;
  auto all_rows = [](const DivergenceInfo&) { return true; };
  for (const auto& rf : row_families(all_rows, [](std::string_view f) { return f == "random_logits" || f == "random_hidden" || f == "random_samples" || f == "random_probs"; }))
    t.push_back({"agreement", rf.id, rf.family});
  for (const auto& d : registry())
    if (d.props.zero_on_identical)
      for (const auto& f : families(d.id))
        if (identical_family(d.id, f.name)) t.push_back({"exact_zeros", d.id, std::string(f.name)});
  for (const auto& rf : row_families(all_rows, [](std::string_view f) { return is_nan_family(f); }))
    if (rf.id != DivergenceId::tvd_prob) t.push_back({"nonfinite", rf.id, rf.family});
  for (auto id : rows_where([](const DivergenceInfo& d) { return d.props.nonnegative || d.props.upper_bound; })) t.push_back({"bounds", id, ""});
  for (auto id : rows_where([](const DivergenceInfo& d) { return d.props.symmetric; })) t.push_back({"symmetry", id, ""});
  for (auto id : rows_where([](const DivergenceInfo& d) { return d.props.shift_invariant; })) t.push_back({"shift", id, ""});
  for (auto id : rows_where([](const DivergenceInfo& d) { return d.props.permutation_invariant; })) t.push_back({"permutation", id, ""});
  for (auto id : rows_where([](const DivergenceInfo& d) { return d.props.mask_invariant; })) t.push_back({"mask_invariance", id, ""});
  for (auto id : rows_where([](const DivergenceInfo& d) { return d.props.grad_rows_sum_zero; })) t.push_back({"grad_rows", id, ""});
  for (auto id : rows_where([](const DivergenceInfo& d) { return d.props.has_reduction_none; })) t.push_back({"reduction_none", id, ""});
  for (auto id : rows_where([](const DivergenceInfo& d) { return d.props.has_log_target; })) t.push_back({"log_target", id, ""});
  t.push_back({"fused_projection", DivergenceId::fused_linear_masked_kl_divergence, ""});
  t.push_back({"dcor_invariance", DivergenceId::masked_unbiased_dcor, ""});
  return t;
}

class PropertyCanFail : public ::testing::TestWithParam<Target> {};

TEST_P(PropertyCanFail, AgainstItsMutant) {
  const Target t = GetParam();
  const std::map<std::string, std::string> mutant_of = {
      {"agreement", "first_value_leak"}, {"exact_zeros", "tiny_offset"},     {"nonfinite", "nan_swallow"},
      {"bounds", "negative_loss"},       {"symmetry", "first_value_leak"},   {"shift", "first_value_leak"},
      {"permutation", "first_value_leak"}, {"mask_invariance", "first_value_leak"}, {"grad_rows", "grad_row_offset"},
      {"reduction_none", "none_scaled"}, {"log_target", "log_target_drift"}, {"fused_projection", "fused_grad_scale"},
      {"dcor_invariance", "first_value_leak"}};
  const Backend& b = mutant(mutant_of.at(t.property));
  const DivergenceId id = t.id;
  const std::string fam = t.family;
  std::function<void()> body;
  if (t.property == "agreement") body = [&b, id, fam] { agreement_property(b, id, fam); };
  if (t.property == "exact_zeros") body = [&b, id, fam] { exact_zeros_property(b, id, fam); };
  if (t.property == "nonfinite") body = [&b, id, fam] { nonfinite_property(b, id, fam); };
  if (t.property == "bounds") body = [&b, id] { bounds_property(b, id); };
  if (t.property == "symmetry") body = [&b, id] { symmetry_property(b, id); };
  if (t.property == "shift") body = [&b, id] { shift_property(b, id); };
  if (t.property == "permutation") body = [&b, id] { permutation_property(b, id); };
  if (t.property == "mask_invariance") body = [&b, id] { mask_invariance_property(b, id); };
  if (t.property == "grad_rows") body = [&b, id] { grad_rows_property(b, id); };
  if (t.property == "reduction_none") body = [&b, id] { reduction_none_property(b, id); };
  if (t.property == "log_target") body = [&b, id] { log_target_property(b, id); };
  if (t.property == "fused_projection") body = [&b] { fused_projection_property(b); };
  if (t.property == "dcor_invariance") body = [&b] { dcor_invariance_property(b); };
  ASSERT_TRUE(body) << t.property;
  EXPECT_FALSE(passes(t.property, body)) << "property " << t.property << " on " << name_of(id)
                                         << " passed the mutant " << b.name() << ": it cannot catch that bug";
}

INSTANTIATE_TEST_SUITE_P(EveryInstantiatedProperty, PropertyCanFail, ::testing::ValuesIn(targets()),
                         [](const ::testing::TestParamInfo<Target>& p) {
                           return p.param.property + "__" + std::string(name_of(p.param.id)) +
                                  (p.param.family.empty() ? "" : "__" + p.param.family);
                         });

}  // namespace
}  // namespace divcheck::props

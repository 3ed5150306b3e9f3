#include "core/registry.hpp"

#include <cmath>
#include <stdexcept>

namespace divcheck {

namespace {

using P = ParamKind;
constexpr auto kLogits = RoleKind::logits;

RoleSpec logits(std::string_view name, Side side, bool differentiable = true) {
  return {name, kLogits, {"B", "T", "V"}, false, differentiable, side};
}
RoleSpec mask(std::string_view name, bool optional) {
  return {name, RoleKind::position_mask, {"B", "T", ""}, optional, false, Side::none};
}
RoleSpec support() { return {"support_mask", RoleKind::support_mask, {"B", "T", "V"}, true, false, Side::none}; }

// Benchmark shapes of issue 3: (B*T, V) = (8192, 128256) and (4096, 256000).
std::vector<BenchShape> llm_shapes() { return {{8192, 128256}, {4096, 256000}}; }

// Tolerance constants (docs/tolerances.md derives each): a logit-level divergence evaluates
// exp, log and log1p/expm1 (each <= 2 ulp in CUDA's and glibc's float versions) and a handful
// of multiply/adds per column on top of the row sums; c = 8 covers those per-column roundings
// with margin. The summation depth sigma(n) is added by the tolerance model, not here.
constexpr ToleranceSpec kLogitTol{8.0, 8.0};

std::vector<DivergenceInfo> make_registry() {
  std::vector<DivergenceInfo> r;
  const double ln2 = std::log(2.0);

  {  // masked_kl_divergence
    DivergenceInfo d{DivergenceId::masked_kl_divergence, "masked_kl_divergence",
                     "KL(p||q), p = softmax(target_logits), q = softmax(input_logits); per-sequence masked mean, batch mean",
                     {logits("input_logits", Side::q), logits("target_logits", Side::p), mask("attention_mask", true)},
                     {P::log_target}, {}, "mean", true, {}, kLogitTol, llm_shapes()};
    d.props.has_log_target = true;
    r.push_back(d);
  }
  {  // masked_jefferys_divergence
    DivergenceInfo d{DivergenceId::masked_jefferys_divergence, "masked_jefferys_divergence",
                     "KL(p||q) + KL(q||p) = sum (p - q)(lp - lq); per-sequence masked mean, batch mean",
                     {logits("input_logits", Side::q), logits("target_logits", Side::p), mask("attention_mask", true)},
                     {P::log_target}, {}, "mean", false, {}, kLogitTol, llm_shapes()};
    d.props.symmetric = true;
    d.props.has_log_target = true;
    r.push_back(d);
  }
  {  // masked_cross_entropy
    DivergenceInfo d{DivergenceId::masked_cross_entropy, "masked_cross_entropy",
                     "soft cross-entropy -sum p lq, optionally capped max_loss*tanh(scaling_factor*ce/max_loss)",
                     {logits("input_logits", Side::q), logits("target_logits", Side::p), mask("attention_mask", true)},
                     {P::max_loss, P::scaling_factor}, {}, "mean", true, {}, kLogitTol, llm_shapes()};
    d.props.zero_on_identical = false;  // identical rows give the entropy of p
    r.push_back(d);
  }
  auto support_row = [&](DivergenceId id, std::string_view name, std::string_view summary, bool symmetric,
                         std::optional<double> bound) {
    DivergenceInfo d{id, name, summary,
                     {logits("noisy_logits", Side::q), logits("clean_logits", Side::p), mask("attention_mask", false), support()},
                     {P::reduction}, {"mean", "none"}, "mean", true, {}, kLogitTol, llm_shapes()};
    d.props.symmetric = symmetric;
    d.props.upper_bound = bound;
    d.props.has_reduction_none = true;
    r.push_back(d);
  };
  support_row(DivergenceId::jefferys_divergence, "jefferys_divergence",
              "sum over the support of (p - q)(lp - lq); per-sequence masked mean; mean or none", true, std::nullopt);
  support_row(DivergenceId::jensen_shannon_divergence, "jensen_shannon_divergence",
              "sum over the support of p(lp - lm)/2 + q(lq - lm)/2, lm = log((p+q)/2)", true, ln2);
  support_row(DivergenceId::squared_hellinger_distance, "squared_hellinger_distance",
              "1/2 sum over the support of (sqrt p - sqrt q)^2", true, 1.0);
  support_row(DivergenceId::total_variation, "total_variation", "1/2 sum over the support of |p - q|", true, 1.0);

  {  // temperature_scaled_masked_kl_divergence
    DivergenceInfo d{DivergenceId::temperature_scaled_masked_kl_divergence, "temperature_scaled_masked_kl_divergence",
                     "KL(softmax(t/T) || softmax(s/T)), token mean over position_mask",
                     {logits("teacher_logits", Side::p), logits("student_logits", Side::q), mask("position_mask", false)},
                     {P::temperature}, {}, "token_mean", true, {}, kLogitTol, llm_shapes()};
    r.push_back(d);
  }
  {  // temperature_scaled_masked_jefferys_divergence
    DivergenceInfo d{DivergenceId::temperature_scaled_masked_jefferys_divergence,
                     "temperature_scaled_masked_jefferys_divergence",
                     "KL(pt||ps) + KL(ps||pt) at temperature T, token mean over position_mask",
                     {logits("teacher_logits", Side::p), logits("student_logits", Side::q), mask("position_mask", false)},
                     {P::temperature}, {}, "token_mean", true, {}, kLogitTol, llm_shapes()};
    d.props.symmetric = true;
    r.push_back(d);
  }
  {  // fused_linear_masked_kl_divergence
    DivergenceInfo d{DivergenceId::fused_linear_masked_kl_divergence, "fused_linear_masked_kl_divergence",
                     "KL between softmax(h W^T / T) of teacher and student, projection fused, logits never materialized",
                     {{"student_hidden", RoleKind::hidden, {"B", "T", "H"}, false, true, Side::q},
                      {"teacher_hidden", RoleKind::hidden, {"B", "T", "H"}, false, false, Side::p},
                      {"lm_head_weight", RoleKind::weight, {"V", "H", ""}, false, true, Side::none},
                      mask("attention_mask", true)},
                     {P::jsd_beta, P::temperature, P::reduction, P::chunk_size},
                     {"sequence_mean", "token_mean"}, "sequence_mean", true, {},
                     // The projection adds a dot product of length H per logit (sigma(H) in the
                     // model) and its error enters every column; see docs/tolerances.md.
                     ToleranceSpec{8.0, 8.0},
                     {{8192, 128256, 4096}, {4096, 256000, 4096}}};
    d.props.shift_invariant = false;       // inputs are hidden states, not logits
    d.props.permutation_invariant = true;  // permuting rows of W permutes the vocabulary
    d.props.grad_rows_sum_zero = false;
    r.push_back(d);
  }
  {  // masked_unbiased_dcor
    DivergenceInfo d{DivergenceId::masked_unbiased_dcor, "masked_unbiased_dcor",
                     "unbiased distance correlation (U-centred, Szekely & Rizzo 2014) between valid samples",
                     {{"samples_1", RoleKind::samples, {"B", "T", "D1"}, false, true, Side::none},
                      {"samples_2", RoleKind::samples, {"B", "T", "D2"}, false, true, Side::none},
                      mask("attention_mask", false)},
                     {P::safety_factor}, {}, "mean", true, {},
                     // O(N^2) distance matrix sums and a square root of a product of two of
                     // them; the scale carries the N^2 condition, see docs/tolerances.md.
                     ToleranceSpec{16.0, 16.0},
                     {{4096, 1024}, {8192, 256}}};
    d.props.upper_bound = 1.0;
    d.props.symmetric = true;
    d.props.zero_on_identical = false;  // dcor(X, X) is close to 1
    d.props.shift_invariant = true;     // translating samples leaves distances unchanged
    d.props.permutation_invariant = false;
    d.props.grad_rows_sum_zero = false;
    r.push_back(d);
  }
  {  // tvd_prob
    DivergenceInfo d{DivergenceId::tvd_prob, "tvd_prob",
                     "total variation on probability rows as in LigerTVDLoss (the bug-report case)",
                     {{"p", RoleKind::probabilities, {"N", "V", ""}, false, true, Side::p},
                      {"q", RoleKind::probabilities, {"N", "V", ""}, false, false, Side::q},
                      {"labels", RoleKind::labels, {"N", "", ""}, true, false, Side::none}},
                     {P::reduction}, {"batchmean", "sum", "mean", "none"}, "batchmean", true, {},
                     // one subtraction, one abs, one multiply per element plus the row sums.
                     ToleranceSpec{4.0, 2.0},
                     {{8192, 128256}, {4096, 256000}}};
    d.props.upper_bound = 1.0;
    d.props.symmetric = true;
    d.props.shift_invariant = false;
    d.props.grad_rows_sum_zero = false;
    d.props.mask_invariant = true;
    r.push_back(d);
  }
  return r;
}

}  // namespace

const RoleSpec* DivergenceInfo::role(std::string_view n) const {
  for (const auto& r : roles)
    if (r.name == n) return &r;
  return nullptr;
}

bool DivergenceInfo::accepts(ParamKind k) const {
  for (auto p : params)
    if (p == k) return true;
  return false;
}

const std::vector<DivergenceInfo>& registry() {
  static const std::vector<DivergenceInfo> r = [] {
    auto v = make_registry();
    if (v.size() != kNumDivergences) throw std::logic_error("registry size != kNumDivergences");
    for (std::size_t i = 0; i < v.size(); ++i)
      if (static_cast<std::size_t>(v[i].id) != i) throw std::logic_error("registry rows out of DivergenceId order");
    return v;
  }();
  return r;
}

const DivergenceInfo& info(DivergenceId id) { return registry().at(static_cast<std::size_t>(id)); }

const DivergenceInfo* find_divergence(std::string_view name) {
  for (const auto& d : registry())
    if (d.name == name) return &d;
  return nullptr;
}

std::string_view name_of(DivergenceId id) { return info(id).name; }

std::string_view param_name(ParamKind k) {
  switch (k) {
    case P::log_target: return "log_target";
    case P::max_loss: return "max_loss";
    case P::scaling_factor: return "scaling_factor";
    case P::temperature: return "temperature";
    case P::reduction: return "reduction";
    case P::jsd_beta: return "jsd_beta";
    case P::chunk_size: return "chunk_size";
    case P::safety_factor: return "safety_factor";
  }
  return "?";
}

}  // namespace divcheck

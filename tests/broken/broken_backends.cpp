// The deliberately broken backends (see broken_backends.hpp for the catalogue of bugs).
#include "tests/broken/broken_backends.hpp"

#include <functional>

#include "core/errors.hpp"
#include "tests/broken/faulty_rows.hpp"

namespace divcheck {

namespace {

using broken::Faults;
using D = DivergenceId;

// Returns the broken result for the rows it breaks, or nothing (then the CPU backend runs).
using BrokenRun = std::function<bool(const Case&, const Backend& cpu, Outputs& out)>;

class BrokenBackend final : public Backend {
 public:
  BrokenBackend(std::string name, BrokenRun broken) : name_(std::move(name)), cpu_(make_cpu_backend()), broken_(std::move(broken)) {}
  std::string_view name() const override { return name_; }
  Outputs run(const Case& c) const override {
    Outputs out;
    if (broken_(c, *cpu_, out)) return out;
    return cpu_->run(c);
  }

 private:
  std::string name_;
  std::unique_ptr<Backend> cpu_;
  BrokenRun broken_;
};

BrokenRun faulty_rows_for(std::initializer_list<D> ids, Faults f) {
  std::vector<D> rows(ids);
  return [rows, f](const Case& c, const Backend&, Outputs& out) {
    for (D d : rows)
      if (c.id == d) {
        out = broken::faulty_logit_rows(c, f);
        return true;
      }
    return false;
  };
}

BrokenRun run_for(std::string_view name) {
  if (name == "tvd_two_way_select")
    return [](const Case& c, const Backend& cpu, Outputs& out) {
      if (c.id == D::tvd_prob) {
        out = broken::two_way_tvd_prob(c, cpu);
        return true;
      }
      if (c.id == D::total_variation) {
        out = broken::faulty_logit_rows(c, Faults{.two_way_sign = true});
        return true;
      }
      return false;
    };
  if (name == "nan_on_fully_masked")
    return [](const Case& c, const Backend& cpu, Outputs& out) {
      if (!broken::is_per_sequence_row(c)) return false;
      out = broken::unguarded_sequence_mean(c, cpu);
      return true;
    };
  if (name == "no_max_subtraction")
    return faulty_rows_for({D::masked_kl_divergence, D::temperature_scaled_masked_kl_divergence},
                           Faults{.no_max_subtraction = true});
  if (name == "wrong_temperature_factor")
    return faulty_rows_for({D::temperature_scaled_masked_kl_divergence}, Faults{.no_temperature_factor = true});
  if (name == "masked_position_leaks")
    return faulty_rows_for({D::masked_kl_divergence, D::temperature_scaled_masked_kl_divergence},
                           Faults{.leak_masked = true});
  return nullptr;
}

}  // namespace

const std::vector<BrokenBackendInfo>& broken_backend_catalog() {
  static const std::vector<BrokenBackendInfo> catalog = {
      {"tvd_two_way_select", "sgn(p - q) as (p > q ? +1 : -1) in the tvd_prob and total_variation gradients",
       {D::tvd_prob, D::total_variation}, "ties p == q: identical rows, padded vocabulary columns"},
      {"nan_on_fully_masked", "per-sequence mean sum m ell / sum m without the n_b = 0 guard",
       {D::masked_kl_divergence, D::masked_jefferys_divergence, D::masked_cross_entropy, D::jefferys_divergence,
        D::jensen_shannon_divergence, D::squared_hellinger_distance, D::total_variation,
        D::fused_linear_masked_kl_divergence},
       "a sequence with no valid position"},
      {"no_max_subtraction", "softmax as exp(z) / sum exp(z) in float32's exp range (no max subtraction)",
       {D::masked_kl_divergence, D::temperature_scaled_masked_kl_divergence},
       "logits above ~88.7 (1e4, 65504, bf16 max) or a row entirely below ~-104, small temperatures"},
      {"wrong_temperature_factor", "temperature-scaled KL gradients without the 1/T factor",
       {D::temperature_scaled_masked_kl_divergence}, "any temperature != 1"},
      {"masked_position_leaks", "masked positions are read, computed and summed into the loss",
       {D::masked_kl_divergence, D::temperature_scaled_masked_kl_divergence},
       "masked positions whose values differ from zero-effect ones (garbage, NaN, other logits)"},
  };
  return catalog;
}

std::unique_ptr<Backend> make_broken_backend(std::string_view name) {
  BrokenRun run = run_for(name);
  if (!run) {
    std::string known;
    for (const auto& b : broken_backend_catalog()) known += (known.empty() ? "" : ", ") + std::string(b.name);
    throw InvalidArgument("broken backend", std::string(name), "unknown; known: " + known);
  }
  return std::make_unique<BrokenBackend>(std::string(name), std::move(run));
}

std::vector<std::pair<std::string, std::unique_ptr<Backend>>> make_broken_backends() {
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> v;
  for (const auto& b : broken_backend_catalog()) v.emplace_back(std::string(b.name), make_broken_backend(b.name));
  return v;
}

}  // namespace divcheck

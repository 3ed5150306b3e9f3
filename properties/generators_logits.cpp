// Case families of the nine logit-level rows (two (B, T, V) logit tensors, a position mask,
// maybe a support mask): random logits, identical rows, ties, padded vocabulary, masks, garbage,
// extreme and near-one-hot logits, temperatures, narrow dtypes, support masks, NaN rows, the
// two log_target paths, capped cross-entropy, reductions and upstream gradients.
#include <algorithm>
#include <cmath>
#include <limits>

#include "properties/family_table.hpp"
#include "properties/generators.hpp"
#include "properties/gen_primitives.hpp"
#include "properties/logit_draft.hpp"

namespace divcheck::pgen {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Sets columns of a row to `value` where `pad` is true, keeping column `keep` untouched so that
// the row is never entirely padded.
void pad_row(std::vector<double>& x, const LogitDraft& dr, std::int64_t row, const std::vector<bool>& pad,
             std::int64_t keep, double value) {
  for (std::int64_t v = 0; v < dr.V; ++v)
    if (pad[static_cast<std::size_t>(v)] && v != keep) x[dr.at(row, v)] = value;
}

// --- families --------------------------------------------------------------------------

Case random_logits(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, draw_scale());
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "random_logits");
}

Case identical_rows(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, draw_scale());
  if (dr.V >= 2 && *chance(1, 3)) {  // -inf columns, identical on both sides (never a whole row)
    for (std::int64_t r = 0; r < dr.rows(); ++r) {
      const auto pad = draw_flags(static_cast<std::size_t>(dr.V), 1, 3);
      pad_row(dr.q, dr, r, pad, *int_toward(0, dr.V - 1, 0), -kInf);
    }
  }
  dr.p = dr.q;  // bitwise identical at every position
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "identical_rows");
}

Case partial_ties(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  const double scale = draw_scale();
  draw_random_logits(dr, scale);  // q random; p rebuilt from q below
  const auto other = draw_values(dr.q.size(), logit_dist(scale), dr.dt);
  dr.p = dr.q;
  for (std::int64_t r = 0; r < dr.rows(); ++r) {
    // 0: some columns equal logits on both sides, the others differ; 1: p is q with two
    // columns swapped (the probabilities then tie exactly at every other column); 2: identical.
    const std::int64_t mode = *int_toward(0, 2, 0);
    if (mode == 0) {
      const auto differ = draw_flags(static_cast<std::size_t>(dr.V), 1, 2);
      for (std::int64_t v = 0; v < dr.V; ++v)
        if (differ[static_cast<std::size_t>(v)]) dr.p[dr.at(r, v)] = other[dr.at(r, v)];
    } else if (mode == 1 && dr.V >= 2) {
      const std::int64_t a = *int_toward(0, dr.V - 1, 0);
      const std::int64_t b = *int_toward(0, dr.V - 1, dr.V - 1);
      std::swap(dr.p[dr.at(r, a)], dr.p[dr.at(r, b)]);
    }
  }
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "partial_ties");
}

Case padded_vocab(const LogitRow& row) {
  LogitDraft dr = draw_layout({.min_v = 2});
  draw_random_logits(dr, draw_scale());
  const double lowest = -max_finite(dr.dt);
  for (std::int64_t r = 0; r < dr.rows(); ++r) {
    // 0: trailing -inf in both; 1: random -inf columns in both; 2: dtype-lowest in both;
    // 3: -inf in q only (KL(p||q) = +inf); 4: -inf in p only; 5: unpadded row.
    const std::int64_t mode = *int_toward(0, 5, 0);
    std::vector<bool> pad(static_cast<std::size_t>(dr.V), false);
    std::int64_t keep = 0;
    if (mode == 0) {
      const std::int64_t k = *int_toward(1, dr.V - 1, 1);  // number of padded trailing columns
      for (std::int64_t v = dr.V - k; v < dr.V; ++v) pad[static_cast<std::size_t>(v)] = true;
    } else if (mode != 5) {
      pad = draw_flags(static_cast<std::size_t>(dr.V), 1, 3);
      keep = *int_toward(0, dr.V - 1, 0);
    }
    if (mode == 0 || mode == 1) {
      pad_row(dr.q, dr, r, pad, keep, -kInf);
      pad_row(dr.p, dr, r, pad, keep, -kInf);
    } else if (mode == 2) {
      pad_row(dr.q, dr, r, pad, keep, lowest);
      pad_row(dr.p, dr, r, pad, keep, lowest);
    } else if (mode == 3) {
      pad_row(dr.q, dr, r, pad, keep, -kInf);
    } else if (mode == 4) {
      pad_row(dr.p, dr, r, pad, keep, -kInf);
    }
  }
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "padded_vocab");
}

Case fully_masked(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, *one_of_values<double>({1.0, 10.0}));
  draw_params(row, dr);
  draw_position_mask(row, dr, true);
  // 0: some sequences fully masked; 1: the whole batch masked; 2: a single valid token.
  const std::int64_t mode = *int_toward(0, 2, 0);
  const std::int64_t valid = draw_valid_value(dr.mask_dt);
  if (mode == 0) {
    const auto dead = draw_flags(static_cast<std::size_t>(dr.B), 1, 2);
    const std::int64_t forced = *int_toward(0, dr.B - 1, 0);
    for (std::int64_t b = 0; b < dr.B; ++b)
      if (dead[static_cast<std::size_t>(b)] || b == forced)
        for (std::int64_t t = 0; t < dr.T; ++t) dr.mask[static_cast<std::size_t>(b * dr.T + t)] = 0;
  } else {
    std::fill(dr.mask.begin(), dr.mask.end(), 0);
    if (mode == 2) dr.mask[static_cast<std::size_t>(*int_toward(0, dr.rows() - 1, 0))] = valid;
  }
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "fully_masked");
}

Case masked_garbage(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, *one_of_values<double>({1.0, 10.0}));
  draw_params(row, dr);
  draw_position_mask(row, dr, true, 1, 2);
  dr.mask[static_cast<std::size_t>(*int_toward(0, dr.rows() - 1, 0))] = 0;  // at least one masked position
  const auto gq = draw_values(dr.q.size(), garbage_dist(), dr.dt);
  const auto gp = draw_values(dr.p.size(), garbage_dist(), dr.dt);
  const auto where = draw_flags(dr.q.size(), 1, 2);
  for (std::int64_t r = 0; r < dr.rows(); ++r) {
    if (dr.mask[static_cast<std::size_t>(r)] != 0) continue;
    for (std::int64_t v = 0; v < dr.V; ++v) {
      const std::size_t i = dr.at(r, v);
      if (where[i] || v == 0) {
        dr.q[i] = gq[i];
        dr.p[i] = gp[i];
      }
    }
  }
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "masked_garbage");
}

Case extreme_logits(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  // Values drawn unrounded (f64), offset, then rounded once to the dtype.
  const std::size_t n = static_cast<std::size_t>(dr.rows() * dr.V);
  dr.q = draw_values(n, logit_dist(1.0), DType::f64);
  dr.p = draw_values(n, logit_dist(1.0), DType::f64);
  // 0: rows offset by +-1e4; 1: a column at the dtype's largest value (65504, or bf16's max for
  // f32/bf16) on both sides; 2: -max as padding on both sides (never a whole row).
  const std::int64_t mode = *int_toward(0, 2, 0);
  const double big = dr.dt == DType::f16 ? 65504.0 : *one_of_values<double>({0x1.fep127, 65504.0});
  for (std::int64_t r = 0; r < dr.rows(); ++r) {
    if (mode == 0) {
      const double oq = *one_of_values<double>({1e4, -1e4, 0.0, 3e4});
      const double op = *one_of_values<double>({1e4, -1e4, 0.0, -3e4});
      for (std::int64_t v = 0; v < dr.V; ++v) {
        dr.q[dr.at(r, v)] += oq;
        dr.p[dr.at(r, v)] += op;
      }
    } else if (mode == 1) {
      const std::int64_t col = *int_toward(0, dr.V - 1, 0);
      dr.q[dr.at(r, col)] = big;
      dr.p[dr.at(r, col)] = big;
    } else if (dr.V >= 2) {
      const auto pad = draw_flags(static_cast<std::size_t>(dr.V), 1, 2);
      const std::int64_t keep = *int_toward(0, dr.V - 1, 0);
      pad_row(dr.q, dr, r, pad, keep, -max_finite(dr.dt));
      pad_row(dr.p, dr, r, pad, keep, -max_finite(dr.dt));
    }
  }
  for (auto& x : dr.q) x = round_to_dtype(x, dr.dt);
  for (auto& x : dr.p) x = round_to_dtype(x, dr.dt);
  draw_params(row, dr);
  // Temperatures below 1 would push logit/T of a dtype-max entry past float32's range; powers of
  // two >= 1 divide exactly.
  if (row.temperature) dr.params.temperature = *one_of_values<double>({1.0, 2.0, 4.0});
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "extreme_logits");
}

// Support rows: at times (a row hot at the same column on both sides, with probability 1/2) the
// support keeps that column alone. There p and q are both within e^-30 of 1 and agree to far
// below float32's (and double's) precision, so every difference of the two sides (p - q,
// lp - lq, sqrt p - sqrt q) is rounding noise, and a product of two of them is what the bound
// must cover by its second-order term (docs/tolerances.md, "Products of two noisy factors": the
// CPU gate found Hellinger's missing on such a row, reached there by chance through partial_ties).
Case near_one_hot(const LogitRow& row) {
  LogitDraft dr = draw_layout({.min_v = 2});
  draw_random_logits(dr, 1.0);
  std::vector<std::pair<std::int64_t, std::int64_t>> alone;  // (row, hot column)
  for (std::int64_t r = 0; r < dr.rows(); ++r) {
    const std::int64_t a = *int_toward(0, dr.V - 1, 0);
    const bool same = *chance(1, 2);
    const std::int64_t b = same ? a : *int_toward(0, dr.V - 1, 0);
    // 0: both sides hot; 1: p only; 2: q only.
    const std::int64_t sides = *int_toward(0, 2, 0);
    const double gap_p = static_cast<double>(*int_toward(30, 80, 30));
    const double gap_q = static_cast<double>(*int_toward(30, 80, 30));
    if (sides != 2) dr.p[dr.at(r, a)] = round_to_dtype(dr.p[dr.at(r, a)] + gap_p, dr.dt);
    if (sides != 1) dr.q[dr.at(r, b)] = round_to_dtype(dr.q[dr.at(r, b)] + gap_q, dr.dt);
    if (row.support && same && sides == 0 && *chance(1, 2)) alone.emplace_back(r, a);
  }
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  if (!alone.empty()) {
    if (!dr.has_support) {
      dr.has_support = true;
      dr.support_dt = *gen_mask_dtype();
      dr.support.assign(static_cast<std::size_t>(dr.rows() * dr.V), draw_valid_value(dr.support_dt));
    }
    const std::int64_t keep = draw_valid_value(dr.support_dt);
    for (const auto& [r, a] : alone)
      for (std::int64_t v = 0; v < dr.V; ++v) dr.support[dr.at(r, v)] = v == a ? keep : 0;
  }
  return finish_logit_case(row, std::move(dr), "near_one_hot");
}

Case temperature_extremes(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  // T = 9e37 (bf16 and f32 logits: f16 cannot hold logits at that scale): 1/T is below FLT_MIN,
  // so there the CUDA kernels divide by T (RowPaths::plain_scaled_t), where at every other T of
  // the families they multiply by 1/T rounded (plain_recip_t, bench/RESULTS.md step 72).
  const double temp = dr.dt == DType::f16 ? *one_of_values<double>({1e-3, 1e3, 1e-2, 1e2})
                                          : *one_of_values<double>({1e-3, 1e3, 1e-2, 1e2, 9e37});
  // Logits at scale T (or 10 T) keep |logit / T| modest, so float32 does not overflow; at
  // T = 9e37 at 0.1 T, so that z - m stays finite too.
  draw_random_logits(dr, temp * (temp > 1e30 ? 0.1 : *one_of_values<double>({1.0, 10.0})));
  draw_params(row, dr);
  dr.params.temperature = temp;
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "temperature_extremes");
}

Case narrow_dtypes(const LogitRow& row) {
  LogitDraft dr = draw_layout({.narrow_only = true});
  draw_random_logits(dr, *one_of_values<double>({1.0, 10.0, 0.1}));
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "narrow_dtypes");
}

Case support_masks(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, *one_of_values<double>({1.0, 10.0}));
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  dr.has_support = true;
  dr.support_dt = *gen_mask_dtype();
  const std::int64_t keep = draw_valid_value(dr.support_dt);
  dr.support.assign(dr.q.size(), keep);
  // 0: random columns; 1: top-k of the p-side logits; 2: all zero; 3: all one.
  const std::int64_t mode = *int_toward(0, 3, 0);
  if (mode == 0) {
    const auto dropped = draw_flags(dr.support.size(), 1, 2);
    for (std::size_t i = 0; i < dropped.size(); ++i)
      if (dropped[i]) dr.support[i] = 0;
  } else if (mode == 1) {
    const std::int64_t k = *int_toward(1, dr.V, 1);
    for (std::int64_t r = 0; r < dr.rows(); ++r) {
      std::vector<std::int64_t> idx(static_cast<std::size_t>(dr.V));
      for (std::int64_t v = 0; v < dr.V; ++v) idx[static_cast<std::size_t>(v)] = v;
      std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t a, std::int64_t b) { return dr.p[dr.at(r, a)] > dr.p[dr.at(r, b)]; });
      for (std::int64_t j = k; j < dr.V; ++j) dr.support[dr.at(r, idx[static_cast<std::size_t>(j)])] = 0;
    }
  } else if (mode == 2) {
    std::fill(dr.support.begin(), dr.support.end(), 0);
  }
  return finish_logit_case(row, std::move(dr), "support_masks");
}

Case nan_rows(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, draw_scale());
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  const std::int64_t count = *int_toward(1, std::min<std::int64_t>(3, dr.rows()), 1);
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int64_t r = *int_toward(0, dr.rows() - 1, 0);
    if (dr.has_mask && dr.mask[static_cast<std::size_t>(r)] == 0)
      dr.mask[static_cast<std::size_t>(r)] = draw_valid_value(dr.mask_dt);  // the bad row is valid
    // 0: NaN; 1: +inf; 2: every logit -inf (no finite logit). On the q or the p side.
    const std::int64_t what = *int_toward(0, 2, 0);
    std::vector<double>& x = *chance(1, 2) ? dr.p : dr.q;
    if (what == 2) {
      for (std::int64_t v = 0; v < dr.V; ++v) x[dr.at(r, v)] = -kInf;
    } else {
      x[dr.at(r, *int_toward(0, dr.V - 1, 0))] = what == 0 ? nan_value() : kInf;
    }
  }
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "nan_rows");
}

Case log_target_paths(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, draw_scale());
  // Zero-probability columns matter here (0 log 0 on the probability path): -inf in both
  // sides, or in one side only.
  const std::int64_t pads = dr.V >= 2 ? *int_toward(0, 2, 0) : 0;
  for (std::int64_t r = 0; r < dr.rows() && pads > 0; ++r) {
    const auto pad = draw_flags(static_cast<std::size_t>(dr.V), 1, 3);
    const std::int64_t keep = *int_toward(0, dr.V - 1, 0);
    pad_row(dr.p, dr, r, pad, keep, -kInf);
    if (pads == 1) pad_row(dr.q, dr, r, pad, keep, -kInf);
  }
  draw_params(row, dr);
  dr.params.log_target = *chance(1, 2);
  draw_position_mask(row, dr, false);
  return finish_logit_case(row, std::move(dr), "log_target");
}

Case max_loss_family(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, *one_of_values<double>({10.0, 1.0, 100.0}));
  draw_params(row, dr);
  const bool capped = *chance(3, 4);
  dr.params.max_loss.reset();
  if (capped) {
    dr.params.max_loss = *weighted<double>({{3, 1.0}, {1, 0.1}, {1, 10.0}, {1, 100.0}, {1, 0.01}});
    dr.params.scaling_factor = *weighted<double>({{2, 1.0}, {1, 2.0}, {1, 0.5}, {1, 10.0}, {1, 0.1}});
  }
  if (dr.V >= 2 && *chance(1, 4)) {  // q = 0 < p somewhere: ce = +inf, or max_loss when capped
    for (std::int64_t r = 0; r < dr.rows(); ++r) {
      const auto pad = draw_flags(static_cast<std::size_t>(dr.V), 1, 3);
      pad_row(dr.q, dr, r, pad, *int_toward(0, dr.V - 1, 0), -kInf);
    }
  }
  draw_position_mask(row, dr, false);
  return finish_logit_case(row, std::move(dr), "max_loss");
}

Case reductions(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, draw_scale());
  draw_params(row, dr);
  draw_position_mask(row, dr, true, 2, 3);
  if (*chance(1, 3)) {  // a fully masked sequence: 0 in "none", still counted by "mean"
    const std::int64_t b = *int_toward(0, dr.B - 1, 0);
    for (std::int64_t t = 0; t < dr.T; ++t) dr.mask[static_cast<std::size_t>(b * dr.T + t)] = 0;
  }
  dr.grad_style = GradStyle::unusual;
  draw_optional_support(row, dr);
  return finish_logit_case(row, std::move(dr), "reductions");
}

Case upstream_grads(const LogitRow& row) {
  LogitDraft dr = draw_layout();
  draw_random_logits(dr, draw_scale());
  draw_params(row, dr);
  draw_position_mask(row, dr, false);
  draw_optional_support(row, dr);
  dr.grad_style = GradStyle::unusual;
  return finish_logit_case(row, std::move(dr), "upstream_grads");
}

FamilyDef def(std::string_view name, std::string_view what, Case (*fn)(const LogitRow&), const LogitRow& row) {
  return {{name, what}, [fn, row] { return rc::gen::exec([fn, row] { return fn(row); }); }};
}

}  // namespace

std::vector<FamilyDef> logit_families(const DivergenceInfo& d) {
  const LogitRow row = logit_row(d);
  std::vector<FamilyDef> f;
  f.push_back(def("random_logits", "independent random logits at scale 0.1, 1, 10 or 100", random_logits, row));
  f.push_back(def("identical_rows", "y == x bitwise at every position (loss and gradients exactly 0)", identical_rows, row));
  f.push_back(def("partial_ties", "some columns equal in both sides, rows with two columns swapped", partial_ties, row));
  f.push_back(def("padded_vocab", "-inf or dtype-lowest columns in both sides, -inf in one side only", padded_vocab, row));
  f.push_back(def("fully_masked", "fully masked sequences, an all-masked batch, a single valid token", fully_masked, row));
  f.push_back(def("masked_garbage", "NaN, +-inf and 1e30 at masked positions", masked_garbage, row));
  f.push_back(def("extreme_logits", "rows offset by +-1e4, dtype-max entries in both sides, -max padding", extreme_logits, row));
  f.push_back(def("near_one_hot",
                  row.support ? "one logit 30..80 above the rest, on one or both sides; support rows: at times the "
                                "hot column alone in the support"
                              : "one logit 30..80 above the rest, on one or both sides",
                  near_one_hot, row));
  if (row.temperature)
    f.push_back(def("temperature_extremes", "T = 1e-3 .. 1e3 with logits scaled to keep logit/T modest", temperature_extremes, row));
  f.push_back(def("narrow_dtypes", "bf16 and f16 inputs", narrow_dtypes, row));
  if (row.support)
    f.push_back(def("support_masks", "support masks: random, top-k, all-zero, all-one", support_masks, row));
  f.push_back(def("nan_rows", "NaN, +inf or an all -inf side at a valid position (NaN result)", nan_rows, row));
  if (row.log_target)
    f.push_back(def("log_target", "both log_target paths, with zero-probability columns", log_target_paths, row));
  if (row.max_loss)
    f.push_back(def("max_loss", "capped and uncapped cross-entropy, large ce, infinite ce", max_loss_family, row));
  if (row.reduction) f.push_back(def("reductions", "every reduction, per-sequence upstream gradients", reductions, row));
  f.push_back(def("upstream_grads", "upstream gradient 0, negative, large, small, per-sequence", upstream_grads, row));
  return f;
}

}  // namespace divcheck::pgen

namespace divcheck {

int hot_column_alone_rows(const Case& c) {
  const Tensor* s = c.input("support_mask");
  if (s == nullptr || s->rank() != 3) return 0;
  const pgen::LogitRow row = pgen::logit_row(info(c.id));
  const Tensor& q = c.inputs.at(row.q);
  const Tensor& p = c.inputs.at(row.p);
  const std::int64_t rows = s->dim(0) * s->dim(1), V = s->dim(2);
  int n = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t kept = -1, count = 0, argmax_p = 0, argmax_q = 0;
    for (std::int64_t v = 0; v < V; ++v) {
      const std::int64_t i = r * V + v;
      if (s->nonzero(i)) kept = v, ++count;
      if (p.get(i) > p.get(r * V + argmax_p)) argmax_p = v;
      if (q.get(i) > q.get(r * V + argmax_q)) argmax_q = v;
    }
    n += count == 1 && kept == argmax_p && kept == argmax_q;
  }
  return n;
}

}  // namespace divcheck

// Internal: a logit-row case under construction (the nine rows whose inputs are two (B, T, V)
// logit tensors), the draws every logit family shares (layout, parameters, masks), and the
// step that turns a draft into a validated Case. Functions named draw_* run inside
// rc::gen::exec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/case.hpp"
#include "properties/case_builder.hpp"
#include "properties/float_gen.hpp"

namespace divcheck::pgen {

// Role names and capabilities of a logit row, read from the registry.
struct LogitRow {
  const DivergenceInfo* d = nullptr;
  std::string q, p, mask;     // role names: q side, p side, position mask
  bool mask_optional = false;
  bool support = false;       // has a support_mask role
  bool temperature = false;   // has a temperature parameter
  bool log_target = false;
  bool max_loss = false;
  bool reduction = false;     // has a reduction parameter
};
LogitRow logit_row(const DivergenceInfo& d);

struct LogitDraft {
  std::int64_t B = 1, T = 1, V = 1;
  DType dt = DType::f32;
  std::vector<double> q, p;  // B*T*V values, already rounded to dt
  bool has_mask = false;
  DType mask_dt = DType::boolean;
  std::vector<std::int64_t> mask;  // B*T, 0 = masked
  bool has_support = false;
  DType support_dt = DType::boolean;
  std::vector<std::int64_t> support;  // B*T*V, 0 = column not kept
  Params params;
  GradStyle grad_style = GradStyle::usual;

  std::int64_t rows() const { return B * T; }
  std::size_t at(std::int64_t row, std::int64_t v) const { return static_cast<std::size_t>(row * V + v); }
};

struct LayoutOptions {
  std::int64_t min_v = 1;
  bool narrow_only = false;  // bf16/f16 only
  std::int64_t min_rows = 1; // at least this many positions B*T
};

// Shape and dtype: V first (so it shrinks first), then B and T (capped for large V).
LogitDraft draw_layout(const LayoutOptions& o = {});

// Default-ish parameters of the row (log_target, max_loss/scaling_factor, temperature,
// reduction), drawn so that every allowed value appears.
void draw_params(const LogitRow& row, LogitDraft& dr);

// Fills q and p with independent logit values at `scale`.
void draw_random_logits(LogitDraft& dr, double scale);
// Scale of random logits: 1, 0.1, 10 or 100 (shrinks toward 1).
double draw_scale();

// Position mask: present always (force) or, for an optional mask, with probability 3/4.
void draw_position_mask(const LogitRow& row, LogitDraft& dr, bool force, int valid_num = 4, int valid_den = 5);
// Support mask (support rows only): present with probability 1/3, random columns kept.
void draw_optional_support(const LogitRow& row, LogitDraft& dr);

// n booleans, true with probability num/den (element-wise shrinkable when small).
std::vector<bool> draw_flags(std::size_t n, int num, int den);

// Builds the Case (tensors, grad_output, wanted gradients, provenance) and validates it.
Case finish_logit_case(const LogitRow& row, LogitDraft&& dr, std::string_view family);

}  // namespace divcheck::pgen

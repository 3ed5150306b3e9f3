// The property bodies of the suite, one file per kind in relations/. Each runs inside a
// RapidCheck property: it draws its case(s), computes with the backend `b` (and the float128
// reference where the relation needs bounds), and fails through RC_FAIL / RC_ASSERT when `b`
// breaks the relation. The prop_*.cpp tests run them on the CPU backend;
// test_properties_can_fail.cpp runs them on deliberately wrong backends to prove each can fail.
#pragma once

#include <string>
#include <string_view>

#include "core/registry.hpp"
#include "kernels/backend.hpp"

namespace divcheck::props {

// (a) judge() against the reference, one family of one row.
void agreement_property(const Backend& b, DivergenceId id, const std::string& family);
// (b) identical inputs give exactly zero (family: identical_family of the row).
void exact_zeros_property(const Backend& b, DivergenceId id, const std::string& family);
bool identical_family(DivergenceId id, std::string_view family);
// (c) NaN / inf agreement on the families that produce them (nonfinite_family).
void nonfinite_property(const Backend& b, DivergenceId id, const std::string& family);
bool nonfinite_family(std::string_view family);
// Declared bounds: non-negativity and the upper bound.
void bounds_property(const Backend& b, DivergenceId id);
// Metamorphic relations.
void symmetry_property(const Backend& b, DivergenceId id);
void shift_property(const Backend& b, DivergenceId id);
void permutation_property(const Backend& b, DivergenceId id);
void mask_invariance_property(const Backend& b, DivergenceId id);
void grad_rows_property(const Backend& b, DivergenceId id);
void reduction_none_property(const Backend& b, DivergenceId id);
void log_target_property(const Backend& b, DivergenceId id);
void fused_projection_property(const Backend& b);
void dcor_invariance_property(const Backend& b);

}  // namespace divcheck::props

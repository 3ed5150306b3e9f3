// Shared machinery of the property suite: registry rows and (row, family) pairs to
// instantiate parameterized tests over, the CPU backend and the reference, per-element bounds
// from the tolerance model, tensor comparisons for metamorphic relations, and the RC_TAG of a
// case (family, dtype, vocabulary bucket) that proves the generator mix in the test output.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "core/case.hpp"
#include "kernels/backend.hpp"
#include "properties/case_show.hpp"
#include "properties/generators.hpp"
#include "properties/verdict.hpp"
#include "reference/reference.hpp"

namespace divcheck {
// gtest prints DivergenceId parameters by name (found by argument-dependent lookup).
void PrintTo(DivergenceId id, std::ostream* os);
}  // namespace divcheck

namespace divcheck::props {

// ---- what to instantiate ------------------------------------------------------------------

std::vector<DivergenceId> rows_where(const std::function<bool(const DivergenceInfo&)>& pred);

struct RowFamily {
  DivergenceId id;
  std::string family;
};
// gtest prints parameters with this ("masked_kl_divergence/random_logits").
void PrintTo(const RowFamily& rf, std::ostream* os);
// Every (row, family) pair with pred(row) and family_pred(family name).
std::vector<RowFamily> row_families(const std::function<bool(const DivergenceInfo&)>& pred,
                                    const std::function<bool(std::string_view)>& family_pred);
// Families of a row accepted by family_pred.
std::vector<std::string> families_of(DivergenceId id, const std::function<bool(std::string_view)>& family_pred);

// Test-name generators for INSTANTIATE_TEST_SUITE_P.
std::string row_test_name(const ::testing::TestParamInfo<DivergenceId>& p);
std::string row_family_test_name(const ::testing::TestParamInfo<RowFamily>& p);

// Families whose valid positions hold NaN or +inf on purpose.
bool is_nan_family(std::string_view family);

// A case from one of the row's families accepted by family_pred, chosen uniformly (the choice
// is not shrunk, so a counterexample stays in its family).
rc::Gen<Case> gen_case_of(DivergenceId id, const std::function<bool(std::string_view)>& family_pred);

// ---- running --------------------------------------------------------------------------------

const Backend& cpu();
Outputs run_cpu(const Case& c);           // compute(): validates first
Expected reference_of(const Case& c);     // float128 reference

// ---- bounds and comparisons -----------------------------------------------------------------

struct Bounds {
  std::vector<double> loss;
  std::map<std::string, std::vector<double>> grads;
};
// The per-element bound of judge() for every expected output (element_bound with the row's
// constants and the case's sigmas).
Bounds bounds_of(const Case& c, const Expected& e);

// "" when, element by element, a and b are both NaN, the same infinity, or |a - b| <= bound[i]
// (bound already scaled by the caller); else a message naming `what`, the first offending
// element and its values.
std::string compare_within(const Tensor& a, const Tensor& b, const std::vector<double>& bound, const std::string& what);

// Same shape/dtype and same bytes; else a message.
std::string compare_bitwise(const Tensor& a, const Tensor& b, const std::string& what);

// Fails the current RapidCheck property with `message` (and the case) when message is not "".
void assert_empty(const std::string& message, const Case& c);

// ---- tags -----------------------------------------------------------------------------------

// RC_TAG(family, dtype, size bucket, "loss only" or "with gradients"): the test output then lists
// the distribution.
void tag_case(const Case& c);

// The float dtype of a case.
DType input_dtype(const Case& c);

// A quiet helper to run a property body for one parameter inside a gtest (what RC_GTEST_PROP
// does for a plain function): failures are reported through gtest with the counterexample.
template <typename F>
void check_property(F&& body) {
  rc::detail::checkGTest(std::forward<F>(body));
}

}  // namespace divcheck::props

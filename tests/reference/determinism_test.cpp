// Same input, bitwise same output: repeated calls, and calls from two threads at once (the gate
// runs two cases concurrently; MPFR must not depend on thread-local default precision).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "reference/reference.hpp"
#include "tests/reference/case_builders.hpp"

namespace divcheck {
namespace {

using testing_ref::RandomOptions;
using testing_ref::random_case;

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

bool identical(const Expected& a, const Expected& b) {
  auto same = [](const ExpectedTensor& x, const ExpectedTensor& y) {
    return x.dtype == y.dtype && x.shape == y.shape && same_bits(x.value, y.value) && same_bits(x.scale, y.scale) &&
           same_bits(x.jump, y.jump) && x.exact_zero == y.exact_zero;
  };
  if (!same(a.loss, b.loss) || a.grads.size() != b.grads.size()) return false;
  for (const auto& [role, g] : a.grads)
    if (!b.grads.count(role) || !same(g, b.grads.at(role))) return false;
  return true;
}

std::vector<Case> one_case_per_row() {
  std::vector<Case> cases;
  RandomOptions o;
  o.T = 4;
  o.V = 24;
  for (int i = 0; i < static_cast<int>(kNumDivergences); ++i)
    cases.push_back(random_case(static_cast<DivergenceId>(i), 61, o));
  return cases;
}

TEST(ReferenceDeterminism, RepeatedCallsAreBitwiseIdentical) {
  for (const Case& c : one_case_per_row()) {
    EXPECT_TRUE(identical(compute_reference(c), compute_reference(c))) << name_of(c.id);
    EXPECT_TRUE(identical(compute_reference(c, Precision::mpfr50), compute_reference(c, Precision::mpfr50)))
        << name_of(c.id);
  }
}

TEST(ReferenceDeterminism, TwoThreadsGiveTheSequentialResults) {
  const std::vector<Case> cases = one_case_per_row();
  std::vector<Expected> seq_f128, seq_mpfr;
  for (const Case& c : cases) {
    seq_f128.push_back(compute_reference(c));
    seq_mpfr.push_back(compute_reference(c, Precision::mpfr50));
  }
  std::vector<Expected> par_f128(cases.size()), par_mpfr(cases.size());
  // Thread A walks forward in float128 then MPFR, thread B backward in MPFR then float128.
  std::thread a([&] {
    for (int rep = 0; rep < 3; ++rep)
      for (std::size_t i = 0; i < cases.size(); ++i) {
        par_f128[i] = compute_reference(cases[i]);
        par_mpfr[i] = compute_reference(cases[i], Precision::mpfr50);
      }
  });
  std::vector<Expected> b_f128(cases.size()), b_mpfr(cases.size());
  std::thread b([&] {
    for (int rep = 0; rep < 3; ++rep)
      for (std::size_t k = cases.size(); k-- > 0;) {
        b_mpfr[k] = compute_reference(cases[k], Precision::mpfr50);
        b_f128[k] = compute_reference(cases[k]);
      }
  });
  a.join();
  b.join();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(identical(par_f128[i], seq_f128[i])) << name_of(cases[i].id);
    EXPECT_TRUE(identical(par_mpfr[i], seq_mpfr[i])) << name_of(cases[i].id);
    EXPECT_TRUE(identical(b_f128[i], seq_f128[i])) << name_of(cases[i].id);
    EXPECT_TRUE(identical(b_mpfr[i], seq_mpfr[i])) << name_of(cases[i].id);
  }
}

}  // namespace
}  // namespace divcheck

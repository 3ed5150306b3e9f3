// Internal: the table of families of each row kind. Each generators_*.cpp file contributes the
// families of its rows; generators.cpp assembles them per divergence and serves the public API
// of properties/generators.hpp.
#pragma once

#include <functional>
#include <vector>

#include <rapidcheck.h>

#include "core/case.hpp"
#include "properties/generators.hpp"

namespace divcheck::pgen {

struct FamilyDef {
  Family family;
  std::function<rc::Gen<Case>()> make;  // generator of this family for the row it was built for
};

// A family whose generator calls `fn(row)` inside rc::gen::exec (the row outlives the table).
template <class Row>
FamilyDef family_def(std::string_view name, std::string_view what, Case (*fn)(const Row&), const Row& row) {
  const Row* rp = &row;
  return {{name, what}, [fn, rp] { return rc::gen::exec([fn, rp] { return fn(*rp); }); }};
}

std::vector<FamilyDef> logit_families(const DivergenceInfo& d);  // the nine logit-level rows
std::vector<FamilyDef> fused_families(const DivergenceInfo& d);  // fused_linear_masked_kl_divergence
std::vector<FamilyDef> dcor_families(const DivergenceInfo& d);   // masked_unbiased_dcor
std::vector<FamilyDef> tvd_families(const DivergenceInfo& d);    // tvd_prob

// Vocabulary sizes: awkward small sizes, a prime above 4096, and (rarely, large sizes only)
// the vocabularies of real LLMs. Inside rc::gen::exec. `min_v` excludes smaller ones; when the
// result is large, `rows_cap` tells the caller how many rows (B*T or N) it may use at most.
struct VocabDraw {
  std::int64_t v;
  std::int64_t rows_cap;  // 0 = no cap
};
VocabDraw draw_vocab(std::int64_t min_v);

}  // namespace divcheck::pgen

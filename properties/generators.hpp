// Case generators: one RapidCheck generator per (divergence, family). The families are the
// inputs that break real kernels (SPEC.md, issue 2): ties, padded vocabulary, identical rows,
// masks, garbage at masked positions, extreme logits, near-one-hot rows, extreme temperatures,
// narrow dtypes, awkward vocabulary sizes, dcor degeneracies, fused-linear chunk remainders.
//
// The gate draws case k of a run from family_for_index(k) with a seed derived from (run seed,
// divergence, k), so a case is reproducible from three numbers and shards split the stream
// deterministically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <rapidcheck.h>

#include "core/case.hpp"

namespace divcheck {

struct Family {
  std::string_view name;
  std::string_view what;  // one line for reports and --help
};

// Families that apply to a divergence (row-specific ones included), in a fixed order.
const std::vector<Family>& families(DivergenceId id);

// Generator of cases of one family. Sizes scale with RapidCheck's size parameter; every
// generated case passes validate_case. Cases carry provenance.family.
rc::Gen<Case> gen_case(DivergenceId id, std::string_view family);

// Any family of the divergence (uniform over families), tagged with the family name.
rc::Gen<Case> gen_any_case(DivergenceId id);

// Positions of a logit-row case whose support mask keeps exactly one column, the largest logit
// of both sides (near_one_hot's "hot column alone in the support": p and q agree there to far
// below float32's precision). 0 for cases without a support mask; the generator tests and the
// property tags count them, to show the family reaches that mode.
int hot_column_alone_rows(const Case& c);

// Deterministic single draw (no test framework needed): the gate uses it.
// Returns the shrinkable so that a failing case can be shrunk.
rc::Shrinkable<Case> draw_case(DivergenceId id, std::string_view family, std::uint64_t seed, int size);

}  // namespace divcheck

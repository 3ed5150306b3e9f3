// The public generator API (properties/generators.hpp): the family table of every divergence,
// gen_case / gen_any_case, and the deterministic draw_case used by the gate.
#include "properties/generators.hpp"

#include <array>
#include <mutex>

#include "core/errors.hpp"
#include "properties/family_table.hpp"
#include "properties/gen_primitives.hpp"

namespace divcheck {

namespace {

using pgen::FamilyDef;

std::vector<FamilyDef> build(DivergenceId id) {
  const DivergenceInfo& d = info(id);
  switch (id) {
    case DivergenceId::fused_linear_masked_kl_divergence: return pgen::fused_families(d);
    case DivergenceId::masked_unbiased_dcor: return pgen::dcor_families(d);
    case DivergenceId::tvd_prob: return pgen::tvd_families(d);
    default: return pgen::logit_families(d);
  }
}

struct Tables {
  std::array<std::vector<FamilyDef>, kNumDivergences> defs;
  std::array<std::vector<Family>, kNumDivergences> names;
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    for (std::size_t i = 0; i < kNumDivergences; ++i) {
      t.defs[i] = build(static_cast<DivergenceId>(i));
      for (const auto& f : t.defs[i]) t.names[i].push_back(f.family);
    }
    return t;
  }();
  return t;
}

std::size_t row_index(DivergenceId id) {
  const auto i = static_cast<std::size_t>(id);
  if (i >= kNumDivergences) throw InvalidArgument("divergence", std::to_string(i), "is not a registry row");
  return i;
}

const FamilyDef& find_family(DivergenceId id, std::string_view family) {
  const auto& defs = tables().defs[row_index(id)];
  for (const auto& f : defs)
    if (f.family.name == family) return f;
  std::string known;
  for (const auto& f : defs) known += (known.empty() ? "" : ", ") + std::string(f.family.name);
  throw InvalidArgument("family", "\"" + std::string(family) + "\"",
                        "not a family of " + std::string(name_of(id)) + "; its families are: " + known);
}

}  // namespace

const std::vector<Family>& families(DivergenceId id) { return tables().names[row_index(id)]; }

rc::Gen<Case> gen_case(DivergenceId id, std::string_view family) { return find_family(id, family).make(); }

rc::Gen<Case> gen_any_case(DivergenceId id) {
  const auto& defs = tables().defs[row_index(id)];
  std::vector<rc::Gen<Case>> gens;
  for (const auto& f : defs) gens.push_back(f.make());
  // The family is not shrunk: a counterexample stays in the family that found it.
  return rc::gen::mapcat(rc::gen::noShrink(pgen::int_toward(0, static_cast<std::int64_t>(gens.size()) - 1, 0)),
                         [gens](std::int64_t k) { return gens[static_cast<std::size_t>(k)]; });
}

rc::Shrinkable<Case> draw_case(DivergenceId id, std::string_view family, std::uint64_t seed, int size) {
  if (size < 0) throw InvalidArgument("size", std::to_string(size), "must be >= 0");
  const rc::Gen<Case> g = gen_case(id, family);
  rc::Shrinkable<Case> s = g(rc::Random(seed), size);
  // Record the seed in every shrink as well (the family is already set by the generator).
  return rc::shrinkable::map(std::move(s), [seed](Case c) {
    c.provenance.seed = seed;
    return c;
  });
}

}  // namespace divcheck

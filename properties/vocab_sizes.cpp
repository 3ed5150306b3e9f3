// The vocabulary-size draw shared by the logit rows and tvd_prob (see family_table.hpp).
// Tiers unlock with RapidCheck's size so that small sizes give small, fast cases and shrinking
// moves toward the smallest tier: size < 10: tiny; < 30: + small; < 60: + medium; >= 60: + the
// prime 4099; >= 80: with probability 1/50 one of the real LLM vocabularies (rows capped at 2).
#include <algorithm>

#include "properties/family_table.hpp"
#include "properties/gen_primitives.hpp"

namespace divcheck::pgen {

namespace {

const std::vector<std::vector<std::int64_t>>& tiers() {
  static const std::vector<std::vector<std::int64_t>> t = {
      {1, 2, 3, 4, 5, 7, 8},
      {16, 17, 31, 32, 33, 64, 100, 127},
      {255, 256, 257, 1000, 1024, 1025},
      {4099},  // a prime above 4096: no power-of-two block divides it
  };
  return t;
}
const std::vector<std::int64_t> kLlmVocabs = {32000, 50257, 128256, 151936, 256000};

}  // namespace

VocabDraw draw_vocab(std::int64_t min_v) {
  const bool llm = *rc::gen::withSize([](int size) { return size >= 80 ? chance(1, 50) : rc::gen::just(false); });
  if (llm) {
    const std::int64_t v = *one_of_values(kLlmVocabs);
    return {v, 2};
  }
  const std::int64_t tier = *rc::gen::withSize([](int size) {
    if (size < 10) return rc::gen::just<std::int64_t>(0);
    if (size < 30) return weighted<std::int64_t>({{3, 0}, {4, 1}});
    if (size < 60) return weighted<std::int64_t>({{3, 0}, {4, 1}, {2, 2}});
    return weighted<std::int64_t>({{3, 0}, {4, 1}, {2, 2}, {1, 3}});
  });
  std::vector<std::int64_t> choices;
  for (auto v : tiers()[static_cast<std::size_t>(tier)])
    if (v >= min_v) choices.push_back(v);
  if (choices.empty()) choices.push_back(std::max<std::int64_t>(min_v, 2));
  const std::int64_t v = *one_of_values(choices);
  return {v, v >= 1000 ? 4 : (v >= 255 ? 8 : 0)};
}

}  // namespace divcheck::pgen

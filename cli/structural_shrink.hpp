// Structural shrinking of a failing case, after the generator's shrinks (shrink.hpp). The
// generator's shrinks re-draw every value after the one they shrink, so they rarely drop a
// sequence, a position or a column on their own: the CPU gate's first Hellinger failure of
// 2026-12-05 came out of them as (B, T, V) = (3, 4, 2) although one position of one sequence
// fails alone. This pass removes whole blocks of indices along the registry's named dimensions
// (sequences B, positions T, rows N, samples D, columns V, hidden H), from every input that has
// the dimension and from the upstream gradient where the loss has it, bytes copied as they are;
// first halves, then quarters, down to single indices, keeping each removal after which the
// case still fails (a delta-debugging walk: deterministic for a deterministic predicate).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "cli/shrink.hpp"
#include "core/case.hpp"

namespace divcheck::gate {

// The case without indices [start, start + count) of the dimension named `dim`, or nothing when
// no input has that dimension or the result is not a valid case (validate_case).
std::optional<Case> without_block(const Case& c, std::string_view dim, std::int64_t start, std::int64_t count);

// Continues `r` (its minimal case, steps, attempts) with structural removals while
// still_fails(candidate) holds, within `limits` counted from `t0` (attempts include the
// generator walk's). Candidates that are not valid cases are not counted as attempts.
void shrink_structure(ShrinkResult& r, const std::function<bool(const Case&)>& still_fails, const ShrinkLimits& limits,
                      std::chrono::steady_clock::time_point t0);

}  // namespace divcheck::gate

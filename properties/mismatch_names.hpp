// Printable names of verdict mismatch kinds ("out_of_bound", "not_exact_zero", ...), for
// summaries, reports and test messages.
#pragma once

#include <string_view>

#include "properties/verdict.hpp"

namespace divcheck {

std::string_view mismatch_kind_name(MismatchKind k);

}  // namespace divcheck

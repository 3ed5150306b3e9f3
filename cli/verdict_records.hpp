// Turning a Verdict into report records: names, counts, ratios, and each mismatch's flat index
// unravelled over its tensor's shape ((b, t, v) for a logit gradient, (b) for a per-sequence
// loss, () for a scalar loss). Also the dtype label a case is grouped under in reports.
#pragma once

#include <string>
#include <vector>

#include "core/case.hpp"
#include "properties/verdict.hpp"
#include "reports/report_model.hpp"

namespace divcheck::gate {

std::vector<std::int64_t> unravel(std::int64_t index, const Shape& shape);
std::string coords_string(const std::vector<std::int64_t>& coords);  // "(1, 0, 7)"

// The shape of a verdict tensor ("loss" or a role name) in case c.
Shape output_shape(const Case& c, const std::string& name);

std::vector<report::TensorRecord> tensor_records(const Case& c, const Verdict& v);

// The dtype shared by the case's floating inputs ("f32", "bf16", "f16").
std::string case_dtype(const Case& c);

}  // namespace divcheck::gate

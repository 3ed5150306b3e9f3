// report.json: the machine-readable form of a RunReport (schema in docs/report-schema.md,
// versioned by kReportSchemaVersion). Non-finite numbers (an infinite error ratio, a NaN
// output) are written as the strings "inf", "-inf" and "nan", since JSON has no such numbers.
#pragma once

#include <nlohmann/json.hpp>

#include "reports/report_model.hpp"

namespace divcheck::report {

// ordered_json: fields keep the documented order (schema_version first).
nlohmann::ordered_json to_json(const RunReport& r);

// A double as JSON: a number when finite, else "inf" / "-inf" / "nan".
nlohmann::ordered_json json_number(double v);

}  // namespace divcheck::report

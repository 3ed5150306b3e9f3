// junit.xml: one <testsuite> per divergence, one <testcase> per (family, dtype) that ran, with a
// <failure> carrying each failing case's summary, case file and repro command. A divergence cut
// short by the time budget gets a <skipped> test case "time_budget" (reported, not failed).
#pragma once

#include <string>

#include "reports/report_model.hpp"

namespace divcheck::report {

std::string to_junit_xml(const RunReport& r);

// XML text/attribute escaping (& < > " ' and control characters, which XML 1.0 forbids, as
// "\xNN" text).
std::string xml_escape(const std::string& s);

}  // namespace divcheck::report

// Unit tests of the report library: aggregation, number formatting, escaping, the JUnit and
// Markdown writers and atomic writes. Every expected value follows from the inputs in the test.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/version.hpp"
#include "reports/atomic_file.hpp"
#include "reports/junit_xml.hpp"
#include "reports/markdown_report.hpp"
#include "reports/report_json.hpp"
#include "reports/summary_table.hpp"
#include "reports/text_util.hpp"
#include "tests/cli/process.hpp"
#include "tests/cli/xml_check.hpp"

namespace divcheck::report {
namespace {

using testing::ScratchDir;

constexpr double kInf = std::numeric_limits<double>::infinity();

CaseRecord case_record(std::int64_t k, const std::string& family, const std::string& dtype, bool passed, double ratio) {
  CaseRecord c;
  c.k = k;
  c.family = family;
  c.dtype = dtype;
  c.passed = passed;
  c.worst_ratio = ratio;
  c.seconds = 0.5;
  c.gradients = {"p"};
  return c;
}

// A report with one failing case whose strings hold every character XML and Markdown must
// escape, plus invalid UTF-8.
RunReport nasty_report() {
  RunReport r;
  r.tool_version = "0.1.0";
  r.started_at = "2026-11-30T02:00:00Z";
  r.command_line = "divcheck check --out 'a b'";
  r.backend = "broken<&>\"'";
  r.environment.hostname = "host\x01name";
  r.environment.gpu_unavailable_reason = "no device | none";
  DivergenceRecord d;
  d.name = "tvd_prob";
  d.planned = 4;
  d.case_list = {case_record(0, "ties", "f32", false, kInf), case_record(1, "random", "bf16", true, 0.25),
                 case_record(2, "ties", "f32", true, 0.5)};
  FailureRecord f;
  f.k = 0;
  f.family = "ties";
  f.dtype = "f32";
  f.summary = "FAIL grad p: 3/4 wrong <not_exact_zero> & \xff\xfe";
  f.case_file = "out/failures/tvd_prob-ties-0.safetensors";
  f.repro = "divcheck repro out/failures/tvd_prob-ties-0.safetensors --backend cpu";
  f.regenerate = "divcheck check --divergence tvd_prob --only-case 0";
  f.tensors.push_back({"p", 3, 4, kInf, {{1, {0, 1}, -0.0625, 0.0, 0.0, "not_exact_zero"}}});
  d.failures.push_back(f);
  summarize(d);
  d.budget_exhausted = d.cases < d.planned;
  r.budget_exhausted = true;
  r.divergences.push_back(d);
  return r;
}

TEST(ReportModel, SummarizeCountsFromTheCaseList) {
  DivergenceRecord d;
  d.case_list = {case_record(0, "ties", "f32", true, 0.25), case_record(1, "padded", "bf16", false, 3.0),
                 case_record(2, "ties", "f32", true, 0.5), case_record(3, "ties", "bf16", true, 0.125)};
  summarize(d);
  EXPECT_EQ(d.cases, 4);
  EXPECT_EQ(d.passed, 3);
  EXPECT_EQ(d.failed, 1);
  EXPECT_EQ(d.worst_ratio, 3.0);
  EXPECT_DOUBLE_EQ(d.seconds, 2.0);  // 4 cases x 0.5 s
  EXPECT_EQ(d.families, (std::vector<std::string>{"ties", "padded"}));
  ASSERT_EQ(d.by_family_dtype.size(), 3u);  // ties/f32, padded/bf16, ties/bf16 in first-seen order
  EXPECT_EQ(d.by_family_dtype[0].family, "ties");
  EXPECT_EQ(d.by_family_dtype[0].dtype, "f32");
  EXPECT_EQ(d.by_family_dtype[0].cases, 2);
  EXPECT_EQ(d.by_family_dtype[0].worst_ratio, 0.5);
  EXPECT_EQ(d.by_family_dtype[1].failed, 1);
  EXPECT_EQ(d.by_family_dtype[2].dtype, "bf16");
}

TEST(ReportModel, ForwardOnlyCountsTheDrawnCasesThatAskedForNoGradient) {
  DivergenceRecord d;
  d.case_list = {case_record(0, "a", "f32", true, 0.5), case_record(1, "a", "bf16", true, 0.5),
                 case_record(2, "a", "?", false, kInf), case_record(3, "a", "f32", true, 0.5)};
  d.case_list[1].gradients.clear();  // a loss-only case
  d.case_list[2].gradients.clear();  // the generator threw: not drawn, not counted
  summarize(d);
  EXPECT_EQ(d.forward_only, 1);
  RunReport r;
  r.divergences.push_back(d);
  const nlohmann::ordered_json j = to_json(r)["divergences"][0];
  EXPECT_EQ(j["forward_only"], 1);
  EXPECT_EQ(j["case_list"][0]["gradients"], nlohmann::ordered_json::array({"p"}));
  EXPECT_TRUE(j["case_list"][1]["gradients"].is_array());
  EXPECT_TRUE(j["case_list"][1]["gradients"].empty());
  EXPECT_NE(summary_table(r).find("forward only"), std::string::npos);
}

TEST(ReportModel, NanRatioIsNotHiddenByFiniteOnes) {
  DivergenceRecord d;
  d.case_list = {case_record(0, "a", "f32", true, 0.5), case_record(1, "a", "f32", false, std::nan("")),
                 case_record(2, "a", "f32", true, 0.75)};
  summarize(d);
  EXPECT_TRUE(std::isnan(d.worst_ratio));
}

TEST(ReportModel, FormatRatio) {
  EXPECT_EQ(format_ratio(0.0), "0");
  EXPECT_EQ(format_ratio(0.03125), "0.0312");
  EXPECT_EQ(format_ratio(2.5e-7), "2.50e-07");
  EXPECT_EQ(format_ratio(kInf), "inf");
  EXPECT_EQ(format_ratio(std::nan("")), "nan");
}

TEST(ReportJson, NonFiniteNumbersAreStrings) {
  EXPECT_EQ(json_number(kInf), "inf");
  EXPECT_EQ(json_number(-kInf), "-inf");
  EXPECT_EQ(json_number(std::nan("")), "nan");
  EXPECT_EQ(json_number(0.5), 0.5);
}

TEST(ReportJson, HasTheSchemaFieldsAndSurvivesInvalidUtf8) {
  const nlohmann::ordered_json j = to_json(nasty_report());
  for (const char* field : {"schema_version", "tool_version", "started_at", "wall_seconds", "command_line", "backend",
                            "seed", "shard", "cases_per_divergence", "time_budget", "budget_exhausted", "environment",
                            "divergences"})
    EXPECT_TRUE(j.contains(field)) << field;
  EXPECT_EQ(j["schema_version"], kReportSchemaVersion);
  EXPECT_TRUE(j["environment"]["gpu"].is_null());
  EXPECT_EQ(j["environment"]["gpu_unavailable_reason"], "no device | none");
  const auto& d = j["divergences"][0];
  EXPECT_EQ(d["worst_ratio"], "inf");
  EXPECT_EQ(d["failures"][0]["tensors"][0]["first"][0]["coords"], nlohmann::ordered_json::array({0, 1}));
  // dump with replacement must not throw on the invalid bytes (the writer sanitizes or replaces)
  const std::string text = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  EXPECT_TRUE(nlohmann::json::accept(text));
}

TEST(TextUtil, SanitizeUtf8KeepsValidAndEscapesInvalid) {
  EXPECT_EQ(sanitize_utf8("plain"), "plain");
  EXPECT_EQ(sanitize_utf8("\xce\xbb=1"), "\xce\xbb=1");             // U+03BB stays
  EXPECT_EQ(sanitize_utf8("a\xff" "b"), "a\\xFFb");                 // invalid lead byte
  EXPECT_EQ(sanitize_utf8("\xc0\xaf"), "\\xC0\\xAF");               // overlong '/'
  EXPECT_EQ(sanitize_utf8("\xed\xa0\x80"), "\\xED\\xA0\\x80");      // a surrogate
  EXPECT_EQ(sanitize_utf8("\xe2\x82"), "\\xE2\\x82");               // truncated sequence
}

TEST(TextUtil, ShellQuote) {
  EXPECT_EQ(shell_quote("divcheck-out/x.safetensors"), "divcheck-out/x.safetensors");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_join({"divcheck", "repro", "my file"}), "divcheck repro 'my file'");
}

TEST(JunitXml, EscapesAndIsWellFormed) {
  const std::string xml = to_junit_xml(nasty_report());
  EXPECT_EQ(testing::xml_wellformedness_error(xml), "") << xml;
  EXPECT_EQ(testing::count_elements(xml, "testsuite"), 1);
  // ties/f32 (failed), random/bf16 (passed), and the budget's skipped case
  EXPECT_EQ(testing::count_elements(xml, "testcase"), 3);
  EXPECT_EQ(testing::count_elements(xml, "failure"), 1);
  EXPECT_EQ(testing::count_elements(xml, "skipped"), 1);
  EXPECT_NE(xml.find("divcheck repro out/failures/tvd_prob-ties-0.safetensors --backend cpu"), std::string::npos);
  EXPECT_NE(xml.find("broken&lt;&amp;&gt;&quot;&apos;"), std::string::npos);
  EXPECT_NE(xml.find("host\\x01name"), std::string::npos);
}

TEST(XmlChecker, RejectsMalformedDocuments) {
  // The checker must be able to fail, or the well-formedness tests above prove nothing.
  EXPECT_EQ(testing::xml_wellformedness_error("<a><b/></a>"), "");
  EXPECT_NE(testing::xml_wellformedness_error("<a><b></a>"), "");
  EXPECT_NE(testing::xml_wellformedness_error("<a x=1/>"), "");
  EXPECT_NE(testing::xml_wellformedness_error("<a x='1' x='2'/>"), "");
  EXPECT_NE(testing::xml_wellformedness_error("<a>1 < 2</a>"), "");
  EXPECT_NE(testing::xml_wellformedness_error("<a>R&D</a>"), "");
  EXPECT_NE(testing::xml_wellformedness_error("<a>&nbsp;</a>"), "");
  EXPECT_NE(testing::xml_wellformedness_error("<a/><b/>"), "");
  EXPECT_NE(testing::xml_wellformedness_error("<a>\x01</a>"), "");
}

TEST(MarkdownReport, ListsFailuresWithReproAndEscapesPipes) {
  const std::string md = to_markdown(nasty_report());
  EXPECT_NE(md.find("# divcheck check: FAIL"), std::string::npos);
  EXPECT_NE(md.find("divcheck repro out/failures/tvd_prob-ties-0.safetensors --backend cpu"), std::string::npos);
  EXPECT_NE(md.find("no device \\| none"), std::string::npos);
  EXPECT_NE(md.find("| (0, 1) | -0.0625 | 0 | 0 | not_exact_zero |"), std::string::npos);
  EXPECT_NE(md.find("budget exhausted: ran 3 of 4"), std::string::npos);
}

TEST(SummaryTable, OneRowPerDivergenceWithBudgetNote) {
  const std::string t = summary_table(nasty_report());
  EXPECT_NE(t.find("divergence"), std::string::npos);
  EXPECT_NE(t.find("tvd_prob"), std::string::npos);
  EXPECT_NE(t.find("budget exhausted: ran 3 of 4"), std::string::npos);
  EXPECT_NE(failure_list(nasty_report()).find("regenerate: divcheck check --divergence tvd_prob --only-case 0"),
            std::string::npos);
}

TEST(AtomicFile, ReplacesTheFileAndLeavesNoTemporary) {
  ScratchDir dir;
  const std::string path = dir / "sub/report.json";
  write_file_atomically(path, std::string("first"));
  write_file_atomically(path, std::string("second"));
  EXPECT_EQ(testing::read_text(path), "second");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "sub")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(AtomicFile, UnwritableFolderIsAClearError) {
  ScratchDir dir;
  write_file_atomically(dir / "plain", std::string("x"));
  try {
    write_file_atomically(dir / "plain/under-a-file.json", std::string("y"));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("plain"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace divcheck::report

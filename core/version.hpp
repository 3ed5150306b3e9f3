#pragma once
namespace divcheck {
inline constexpr const char* kVersion = "0.1.0";
// Bumped whenever report.json or the case-file metadata change incompatibly.
inline constexpr int kReportSchemaVersion = 2;  // docs/report-schema.md, "Versions"
inline constexpr int kCaseFileFormatVersion = 1;
}  // namespace divcheck

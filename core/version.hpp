#pragma once
namespace divcheck {
inline constexpr const char* kVersion = "0.1.0";
// Bumped whenever report.json or the case-file metadata change incompatibly.
inline constexpr int kReportSchemaVersion = 1;
inline constexpr int kCaseFileFormatVersion = 1;
}  // namespace divcheck

// Small text helpers shared by the report writers and the CLI: UTF-8 sanitizing (reports must
// stay valid XML/JSON whatever bytes an exception message or a path holds), shell quoting of
// command lines, and a plain-text table.
#pragma once

#include <string>
#include <vector>

namespace divcheck::report {

// Valid UTF-8 passes unchanged; every byte of an invalid sequence becomes "\xNN".
std::string sanitize_utf8(const std::string& s);

// Quote one argument for a POSIX shell only when needed ("a b" -> 'a b', "it's" -> 'it'\''s').
std::string shell_quote(const std::string& arg);
std::string shell_join(const std::vector<std::string>& args);

// A left-aligned plain-text table with a header rule: columns separated by two spaces.
std::string text_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

}  // namespace divcheck::report

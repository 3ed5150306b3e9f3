// Reading JSON text from outside (the headers and metadata of case and result files) and showing
// its values in error messages: internal to core (safetensors.cpp, case_file.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace divcheck::json_guard {

using json = nlohmann::json;

// Deepest nesting accepted in any JSON text we read. A case file needs 3 levels (header object,
// entry object, shape array); the limit only keeps hostile input cheap.
inline constexpr int kMaxJsonDepth = 16;

// A string shown inside an error message: JSON-quoted, invalid UTF-8 replaced, cut at 80 bytes.
std::string in_quotes(std::string_view s);
// A JSON value shown inside an error message, cut at 80 bytes.
std::string shown(const json& v);
// "an integer", "an array", "null", "a string", ...: the kind of a value, for messages.
std::string type_of(const json& v);
// Whether s is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s);
// Parse `text` as one JSON value. Rejects duplicate object keys (nlohmann would keep the last
// silently), nesting deeper than kMaxJsonDepth, comments, raw NUL bytes and trailing garbage, with
// FormatError(origin, ...). `what` names the text in messages ("header", "metadata \"params\"").
json parse_guarded(std::string_view text, const std::string& origin, const std::string& what);

}  // namespace divcheck::json_guard

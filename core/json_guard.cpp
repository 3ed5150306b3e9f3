// Guarded JSON reading and the message helpers (API: core/json_guard.hpp).
#include "core/json_guard.hpp"

#include <cstdint>
#include <set>
#include <vector>

#include "core/errors.hpp"

namespace divcheck::json_guard {

// A string shown inside an error message: JSON-quoted, invalid UTF-8 replaced, cut at 80 bytes.
std::string in_quotes(std::string_view s) {
  constexpr std::size_t kShown = 80;
  std::string head(s.substr(0, kShown));
  std::string q = json(head).dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > kShown) q += "...";
  return q;
}

// A JSON value shown inside an error message, cut at 80 bytes.
std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 80) + "...";
  return s;
}

std::string type_of(const json& v) {
  if (v.is_number_unsigned() || v.is_number_integer()) return "an integer";
  if (v.is_number_float()) return "a floating-point number";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  if (v.is_null()) return "null";
  return std::string("a ") + v.type_name();  // "a string", "a boolean"
}

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else
      return false;
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, surrogates and code points beyond U+10FFFF are not UTF-8.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

namespace {
struct JsonGuardViolation {
  std::string why;
};
}  // namespace

// Parse `text` as one JSON value. Rejects duplicate object keys (nlohmann would keep the last
// silently), nesting deeper than kMaxJsonDepth, comments and trailing garbage. `what` names the
// text in messages ("header", "metadata \"params\"").
json parse_guarded(std::string_view text, const std::string& origin, const std::string& what) {
  // nlohmann's lexer takes a raw NUL byte for the end of the input and would ignore everything
  // after it; valid JSON never contains one (it must be escaped as \u0000 inside strings).
  if (auto nul = text.find('\0'); nul != std::string_view::npos)
    throw FormatError(origin, what + " is not valid JSON: raw NUL byte at offset " + std::to_string(nul));
  std::vector<std::set<std::string>> keys_of_open_objects;
  auto guard = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
        if (depth >= kMaxJsonDepth)
          throw JsonGuardViolation{"nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
        keys_of_open_objects.emplace_back();
        break;
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth)
          throw JsonGuardViolation{"nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
        break;
      case json::parse_event_t::key: {
        const auto& k = parsed.get_ref<const std::string&>();
        if (!keys_of_open_objects.back().insert(k).second) throw JsonGuardViolation{"duplicate key " + in_quotes(k)};
        break;
      }
      case json::parse_event_t::object_end:
        keys_of_open_objects.pop_back();
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), guard, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const JsonGuardViolation& v) {
    throw FormatError(origin, what + ": " + v.why);
  } catch (const json::exception& e) {
    throw FormatError(origin, what + " is not valid JSON: " + e.what());
  }
}

}  // namespace divcheck::json_guard

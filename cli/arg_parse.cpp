// Option parsing and strict value converters.
#include "cli/arg_parse.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/errors.hpp"

namespace divcheck::cli {

std::optional<std::string> ParsedArgs::value(std::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> ParsedArgs::values(std::string_view name) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

ParsedArgs parse_args(std::string_view command, const std::vector<std::string>& args,
                      const std::vector<OptionSpec>& specs) {
  ParsedArgs out;
  bool options_ended = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_ended || a.size() < 2 || a[0] != '-' ) {
      out.positionals.push_back(a);
      continue;
    }
    if (a == "--") {
      options_ended = true;
      continue;
    }
    const std::size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const OptionSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == name) spec = &s;
    if (!spec)
      throw InvalidArgument(
          "option", a, "unknown option of '" + std::string(command) + "' (see '" + std::string(command) + " --help')");
    std::string value;
    if (!spec->takes_value) {
      if (eq != std::string::npos) throw InvalidArgument(name, a.substr(eq + 1), "is a flag and takes no value");
    } else if (eq != std::string::npos) {
      value = a.substr(eq + 1);
    } else {
      // A following "--option" is not taken as a value: "--cases --seed 1" is a missing value.
      if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0)
        throw InvalidArgument(name, "(missing)", "needs a value");
      value = args[++i];
    }
    // Checked once the value is read, so that the message names both values ("--cases 3 --cases 4").
    if (out.values_.count(name) && !spec->repeatable)
      throw InvalidArgument(name, spec->takes_value ? value : "(flag)",
                            spec->takes_value ? "given more than once (first as '" + out.values_[name].front() + "')"
                                              : "given more than once");
    out.values_[name].push_back(value);
  }
  return out;
}

std::int64_t parse_int(std::string_view option, const std::string& text, std::int64_t min, std::int64_t max) {
  const std::string why = "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max)
    throw InvalidArgument(std::string(option), text.empty() ? "(empty)" : text, why);
  return v;
}

std::uint64_t parse_u64(std::string_view option, const std::string& text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || text[0] == '-' || ec != std::errc() || ptr != end)
    throw InvalidArgument(std::string(option), text.empty() ? "(empty)" : text,
                          "must be a decimal unsigned 64-bit integer");
  return v;
}

double parse_positive_seconds(std::string_view option, const std::string& text) {
  char* endp = nullptr;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &endp);
  if (text.empty() || endp != text.c_str() + text.size() || !std::isfinite(v) || !(v > 0.0))
    throw InvalidArgument(std::string(option), text.empty() ? "(empty)" : text,
                          "must be a finite number of seconds > 0");
  return v;
}

std::pair<int, int> parse_shard(std::string_view option, const std::string& text) {
  const std::size_t slash = text.find('/');
  const std::string why = "must be I/N with N >= 1 and 0 <= I < N";
  if (slash == std::string::npos) throw InvalidArgument(std::string(option), text.empty() ? "(empty)" : text, why);
  std::int64_t i = 0, n = 0;
  try {
    i = parse_int(option, text.substr(0, slash), 0, 1 << 20);
    n = parse_int(option, text.substr(slash + 1), 1, 1 << 20);
  } catch (const InvalidArgument&) {
    throw InvalidArgument(std::string(option), text, why);
  }
  if (i >= n) throw InvalidArgument(std::string(option), text, why);
  return {static_cast<int>(i), static_cast<int>(n)};
}

std::vector<std::string> split_list(std::string_view option, const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = v.find(',', start);
      const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty()) throw InvalidArgument(std::string(option), v.empty() ? "(empty)" : v, "has an empty item");
      out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace divcheck::cli

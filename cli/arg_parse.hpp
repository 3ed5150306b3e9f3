// Command-line parsing for the divcheck subcommands: options as "--name value" or
// "--name=value", flags, repeatable options, positionals, and strict value converters. Every
// rejection is an InvalidArgument that names the option and the offending value; the command
// layer turns it into a message and exit code 2.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace divcheck::cli {

struct OptionSpec {
  std::string_view name;    // "--cases"
  bool takes_value = true;  // false: a flag
  bool repeatable = false;  // may be given more than once (values accumulate)
};

class ParsedArgs {
 public:
  std::vector<std::string> positionals;
  bool has(std::string_view name) const { return values_.count(std::string(name)) > 0; }
  // The value of a non-repeatable option (nullopt when absent).
  std::optional<std::string> value(std::string_view name) const;
  // All values of a repeatable option, in order.
  std::vector<std::string> values(std::string_view name) const;

 private:
  friend ParsedArgs parse_args(std::string_view, const std::vector<std::string>&, const std::vector<OptionSpec>&);
  std::map<std::string, std::vector<std::string>> values_;  // flags map to {""}
};

// `command` ("divcheck check") appears in messages. "--" ends the options.
ParsedArgs parse_args(std::string_view command, const std::vector<std::string>& args,
                      const std::vector<OptionSpec>& specs);

// Strict converters (the whole text must be consumed; no sign where none is allowed).
std::int64_t parse_int(std::string_view option, const std::string& text, std::int64_t min, std::int64_t max);
std::uint64_t parse_u64(std::string_view option, const std::string& text);
double parse_positive_seconds(std::string_view option, const std::string& text);
// "I/N" with N >= 1 and 0 <= I < N.
std::pair<int, int> parse_shard(std::string_view option, const std::string& text);
// "a,b" and repeated options -> {"a", "b"}; empty items are rejected.
std::vector<std::string> split_list(std::string_view option, const std::vector<std::string>& values);

}  // namespace divcheck::cli

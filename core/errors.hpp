// The project's error types. Every rejection of bad input names the argument and the value.
#pragma once

#include <stdexcept>
#include <string>

namespace divcheck {

// An argument (API parameter, tensor, CLI option, case-file field) is invalid.
class InvalidArgument : public std::invalid_argument {
 public:
  InvalidArgument(const std::string& argument, const std::string& value, const std::string& why)
      : std::invalid_argument(argument + " = " + value + ": " + why), argument_(argument) {}
  const std::string& argument() const { return argument_; }

 private:
  std::string argument_;
};

// A file (case file, result file) is malformed or lies about its contents.
class FormatError : public std::runtime_error {
 public:
  FormatError(const std::string& file, const std::string& why) : std::runtime_error(file + ": " + why) {}
};

// A requested facility is not available here (e.g. the cuda backend without a GPU).
class Unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace divcheck

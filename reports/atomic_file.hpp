// Atomic file writes: the content goes to a temporary file in the same folder, is flushed, and
// is renamed over the destination, so a reader (or a crash) never sees a half-written report.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace divcheck::report {

// Creates the parent folder if needed. Throws std::runtime_error naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& content);
void write_file_atomically(const std::string& path, const std::vector<std::byte>& content);

}  // namespace divcheck::report

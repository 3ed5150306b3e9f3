// Whole-file reads and writes for case and result files: bounded, with errors naming the path.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace divcheck {

inline constexpr std::size_t kMaxCaseFileBytes = std::size_t{1} << 36;  // 64 GiB: refuse larger

// The file's bytes: regular files by their size, pipes and procfs files in chunks, up to
// kMaxCaseFileBytes. FormatError(path, ...) when it cannot be opened or read, is a directory, or
// is too big.
std::vector<std::byte> read_file_bytes(const std::string& path);
// Creates or truncates the file (0644) and writes every byte; FormatError(path, ...) on failure,
// including a failed close.
void write_file_bytes(const std::string& path, const std::vector<std::byte>& bytes);

}  // namespace divcheck

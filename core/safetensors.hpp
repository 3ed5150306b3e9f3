// The safetensors container: 8-byte little-endian header length N, N bytes of JSON header (an
// optional "__metadata__" object of strings, then one entry per tensor: dtype, shape,
// data_offsets), then the raw little-endian tensor bytes. Case and result files are this
// container with divcheck's metadata and tensor names (core/case_file.hpp).
//
// The decoder treats every byte as hostile: it checks the header length against the file before
// reading, parses the JSON with a depth limit and duplicate-key detection (core/json_guard.hpp),
// checks every tensor entry (dtype, shape, offsets, exact byte count) and that the tensors tile
// the data section exactly, and only then copies bytes (so no allocation exceeds the input's own
// size). Every rejection is a FormatError "<origin>: <what is wrong, naming the field and the value>".
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace divcheck {

inline constexpr std::size_t kMaxHeaderBytes = std::size_t{100} << 20;  // 100 MiB, as safetensors

struct SafeTensors {
  std::map<std::string, std::string> metadata;
  std::map<std::string, Tensor> tensors;
};
// "__metadata__" first (omitted when empty), then the tensors in sorted-name order, contiguous;
// the header is padded with spaces so that the data section starts at a multiple of 8.
// InvalidArgument for a reserved or non-UTF-8 name, a tensor without data, a header over the limit.
std::vector<std::byte> encode_safetensors(const SafeTensors& st);
// `origin` names the source in error messages (a path, or "<bytes>"). Strict: entries with
// unknown fields and a "__metadata__" that is not an object of strings are rejected.
SafeTensors decode_safetensors(const std::vector<std::byte>& bytes, const std::string& origin);

}  // namespace divcheck

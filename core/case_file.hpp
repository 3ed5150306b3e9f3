// Case files in the safetensors layout: 8-byte little-endian header length N, N bytes of JSON
// header, then the raw little-endian tensor bytes. `__metadata__` (string -> string, as the
// format requires) carries the divergence id, parameters, wanted gradients, provenance and the
// project version. The same layout carries external results (loss and gradients) back in.
//
// Files from outside are untrusted: read_case/read_results validate everything (header length,
// JSON, offsets in bounds, contiguous and non-overlapping, dtype names, shapes, sizes, metadata
// values) and throw FormatError naming the file and the problem; they never crash.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/file_io.hpp"      // read_file_bytes, write_file_bytes
#include "core/safetensors.hpp"  // the container

namespace divcheck {

// Cases. Tensor names: the role names, plus "grad_output".
std::vector<std::byte> encode_case(const Case& c);
Case decode_case(const std::vector<std::byte>& bytes, const std::string& origin);
void write_case(const std::string& path, const Case& c);
Case read_case(const std::string& path);

// External results: tensors "loss" and "grad.<role>"; metadata names the divergence.
std::vector<std::byte> encode_outputs(const Case& c, const Outputs& o);
Outputs decode_outputs(const Case& c, const std::vector<std::byte>& bytes, const std::string& origin);
void write_outputs(const std::string& path, const Case& c, const Outputs& o);
Outputs read_outputs(const std::string& path, const Case& c);

}  // namespace divcheck

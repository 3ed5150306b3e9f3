// The safetensors container (API and the decoder's checks: core/safetensors.hpp).
#include "core/safetensors.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/dtype.hpp"
#include "core/errors.hpp"
#include "core/json_guard.hpp"

namespace divcheck {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;
using json_guard::in_quotes;
using json_guard::parse_guarded;
using json_guard::shown;
using json_guard::type_of;
using json_guard::valid_utf8;

// ---------------------------------------------------------------------------------------------
// Little-endian length field

// Little-endian length field

std::uint64_t read_u64_le(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint64_t>(p[i]);
  return v;
}

void append_u64_le(std::vector<std::byte>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xffu));
}

// ---------------------------------------------------------------------------------------------
// Tensor entries of the header

// Tensor entries of the header

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin;
  std::uint64_t end;
};

std::string dtype_names() {
  std::string s;
  for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i64, DType::i32, DType::i16, DType::i8,
                   DType::u8, DType::boolean})
    s += (s.empty() ? "" : ", ") + std::string(safetensors_name(dt));
  return s;
}

// A non-negative integer that fits `limit`; anything else (negative, float, string, too big) is
// rejected by the caller with `false`.
bool as_unsigned(const json& v, std::uint64_t limit, std::uint64_t& out) {
  if (!v.is_number_unsigned()) return false;
  out = v.get<std::uint64_t>();
  return out <= limit;
}

Entry parse_entry(const std::string& name, const json& v, std::uint64_t data_size, const std::string& origin) {
  const std::string where = "tensor " + in_quotes(name);
  auto fail = [&](const std::string& why) -> FormatError { return FormatError(origin, where + ": " + why); };
  if (!v.is_object()) throw fail("entry must be a JSON object, got " + type_of(v) + " " + shown(v));
  for (const auto& [key, value] : v.items()) {
    (void)value;
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw fail("unknown field " + in_quotes(key) + " (fields are dtype, shape, data_offsets)");
  }
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!v.contains(field)) throw fail(std::string("missing field \"") + field + "\"");

  Entry e;
  e.name = name;
  const json& dt = v["dtype"];
  if (!dt.is_string()) throw fail("dtype = " + shown(dt) + " must be a string");
  if (!parse_safetensors_name(dt.get_ref<const std::string&>(), e.dtype))
    throw fail("dtype = " + shown(dt) + " is not supported (supported: " + dtype_names() + ")");

  const json& sh = v["shape"];
  if (!sh.is_array()) throw fail("shape = " + shown(sh) + " must be a list of non-negative integers");
  // numel and byte count are checked for overflow here, and the byte count is then compared with
  // the offsets (which are bounded by the file size) before anything is allocated.
  constexpr auto kI64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  for (std::size_t i = 0; i < sh.size(); ++i) {
    std::uint64_t d = 0;
    if (!as_unsigned(sh[i], kI64Max, d))
      throw fail("shape[" + std::to_string(i) + "] = " + shown(sh[i]) + " is not a non-negative integer below 2^63");
    e.shape.push_back(static_cast<std::int64_t>(d));
  }
  // A zero dimension makes numel 0 whatever the others are; otherwise the product must fit.
  std::uint64_t numel = 1;
  if (std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end()) {
    numel = 0;
  } else {
    for (std::int64_t d : e.shape) {
      if (numel > kI64Max / static_cast<std::uint64_t>(d))
        throw fail("shape = " + shape_string(e.shape) + " has more elements than fit in int64");
      numel *= static_cast<std::uint64_t>(d);
    }
  }
  const std::uint64_t esize = element_size(e.dtype);
  if (numel > std::numeric_limits<std::uint64_t>::max() / esize)
    throw fail("shape = " + shape_string(e.shape) + " has more bytes than fit in 64 bits");
  const std::uint64_t nbytes = numel * esize;

  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    throw fail("data_offsets = " + shown(off) + " must be a list of two non-negative integers [begin, end]");
  if (!as_unsigned(off[0], std::numeric_limits<std::uint64_t>::max(), e.begin) ||
      !as_unsigned(off[1], std::numeric_limits<std::uint64_t>::max(), e.end))
    throw fail("data_offsets = " + shown(off) + " must be a list of two non-negative integers [begin, end]");
  if (e.begin > e.end) throw fail("data_offsets = " + shown(off) + " has begin > end");
  if (e.end - e.begin != nbytes)
    throw fail("data_offsets = " + shown(off) + " span " + std::to_string(e.end - e.begin) + " bytes, but dtype " +
               std::string(safetensors_name(e.dtype)) + " with shape " + shape_string(e.shape) + " needs " +
               std::to_string(nbytes) + " bytes");
  if (e.end > data_size)
    throw fail("data_offsets = " + shown(off) + " end beyond the data section of " + std::to_string(data_size) +
               " bytes");
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v, const std::string& origin) {
  if (!v.is_object())
    throw FormatError(origin, "__metadata__ must be a JSON object of strings, got " + type_of(v) + " " + shown(v));
  std::map<std::string, std::string> m;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      throw FormatError(origin, "__metadata__[" + in_quotes(key) + "] = " + shown(value) + " must be a string");
    m.emplace(key, value.get<std::string>());
  }
  return m;
}

// The tensors must tile [0, data_size) exactly: no overlap, no hole, nothing after the last.
void check_tiling(std::vector<const Entry*> entries, std::uint64_t data_size, const std::string& origin) {
  std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
    if (a->begin != b->begin) return a->begin < b->begin;
    if (a->end != b->end) return a->end < b->end;
    return a->name < b->name;
  });
  std::uint64_t cursor = 0;
  const Entry* previous = nullptr;
  auto range = [](const Entry* e) { return "[" + std::to_string(e->begin) + ", " + std::to_string(e->end) + "]"; };
  for (const Entry* e : entries) {
    if (e->begin < cursor)
      throw FormatError(origin, "tensor " + in_quotes(e->name) + " at data_offsets " + range(e) + " overlaps tensor " +
                                    in_quotes(previous->name) + " at " + range(previous));
    if (e->begin > cursor)
      throw FormatError(origin, "hole in the data section: bytes [" + std::to_string(cursor) + ", " +
                                    std::to_string(e->begin) + ") belong to no tensor (next is tensor " +
                                    in_quotes(e->name) + " at " + range(e) + ")");
    cursor = e->end;
    previous = e;
  }
  if (cursor != data_size)
    throw FormatError(origin, "trailing bytes: the data section has " + std::to_string(data_size) +
                                  " bytes but the tensors end at " + std::to_string(cursor));
}

}  // namespace

// Generic safetensors container

std::vector<std::byte> encode_safetensors(const SafeTensors& st) {
  ordered_json header = ordered_json::object();
  if (!st.metadata.empty()) {
    ordered_json meta = ordered_json::object();
    for (const auto& [key, value] : st.metadata) {
      if (!valid_utf8(key)) throw InvalidArgument("metadata key", in_quotes(key), "is not valid UTF-8");
      if (!valid_utf8(value))
        throw InvalidArgument("metadata[" + in_quotes(key) + "]", in_quotes(value), "is not valid UTF-8");
      meta[key] = value;
    }
    header["__metadata__"] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const auto& [name, t] : st.tensors) {
    if (name == "__metadata__") throw InvalidArgument("tensor name", in_quotes(name), "is reserved for the metadata");
    if (!valid_utf8(name)) throw InvalidArgument("tensor name", in_quotes(name), "is not valid UTF-8");
    // A default-constructed Tensor has shape () but no bytes: writing it would produce a file
    // whose header lies, so refuse it.
    if (static_cast<std::uint64_t>(shape_numel(t.shape())) * element_size(t.dtype()) != t.nbytes())
      throw InvalidArgument("tensor " + in_quotes(name), "<empty>", "has no data (a default-constructed Tensor)");
    ordered_json entry = ordered_json::object();
    entry["dtype"] = std::string(safetensors_name(t.dtype()));
    entry["shape"] = t.shape();
    entry["data_offsets"] = {offset, offset + t.nbytes()};
    header[name] = std::move(entry);
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeaderBytes)
    throw InvalidArgument("safetensors header", std::to_string(text.size()) + " bytes",
                          "exceeds the limit of " + std::to_string(kMaxHeaderBytes) + " bytes");

  std::vector<std::byte> out;
  out.reserve(8 + text.size() + offset);
  append_u64_le(out, text.size());
  for (char ch : text) out.push_back(static_cast<std::byte>(ch));
  for (const auto& [name, t] : st.tensors) out.insert(out.end(), t.data(), t.data() + t.nbytes());
  return out;
}

SafeTensors decode_safetensors(const std::vector<std::byte>& bytes, const std::string& origin) {
  if (bytes.size() < 8)
    throw FormatError(
        origin, "file is " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length field");
  const std::uint64_t n = read_u64_le(bytes.data());
  const std::uint64_t after_length = bytes.size() - 8;
  if (n == 0) throw FormatError(origin, "header length is 0 (the header must be a JSON object)");
  if (n > kMaxHeaderBytes)
    throw FormatError(origin, "header length " + std::to_string(n) + " exceeds the limit of " +
                                  std::to_string(kMaxHeaderBytes) + " bytes");
  if (n > after_length)
    throw FormatError(origin, "header length " + std::to_string(n) + " extends beyond the end of the file (" +
                                  std::to_string(after_length) + " bytes follow the length field)");

  std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<std::size_t>(n));
  json header = parse_guarded(text, origin, "header");
  if (!header.is_object())
    throw FormatError(origin, "header must be a JSON object, got " + type_of(header) + " " + shown(header));

  const std::size_t data_begin = 8 + static_cast<std::size_t>(n);
  const std::uint64_t data_size = bytes.size() - data_begin;
  SafeTensors st;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__")
      st.metadata = parse_metadata(value, origin);
    else
      entries.push_back(parse_entry(name, value, data_size, origin));
  }
  std::vector<const Entry*> order;
  for (const auto& e : entries) order.push_back(&e);
  check_tiling(order, data_size, origin);

  // Every range is now inside the file, so every copy below is bounded by the file size.
  for (const auto& e : entries) {
    const std::byte* first = bytes.data() + data_begin + e.begin;
    std::vector<std::byte> data(first, first + (e.end - e.begin));
    st.tensors.emplace(e.name, Tensor::from_bytes(e.dtype, e.shape, std::move(data)));
  }
  return st;
}

}  // namespace divcheck

// Case files and result files in the safetensors layout (API and layout: core/case_file.hpp).
//
// The decoder treats every byte as hostile: it checks the header length against the file before
// reading, parses the JSON with a depth limit and duplicate-key detection, checks every tensor
// entry (dtype, shape, offsets, exact byte count) and that the tensors tile the data section
// exactly, and only then copies bytes (so no allocation exceeds the file's own size). Every
// rejection is a FormatError "<origin>: <what is wrong, naming the field and the value>".
//
// Decisions (documented here because the header leaves them open):
// - Encoding writes "__metadata__" first, then the tensors in sorted-name order, contiguous; the
//   header is padded with spaces so that the data section starts at a multiple of 8.
// - Entries with unknown fields and a "__metadata__" that is null are rejected (strict reading).
// - Case files always hold "grad_output" of the loss's shape (float32). encode_case writes zeros
//   when the case's grad_output was never set (a default-constructed Tensor); any other
//   grad_output must already be float32 of the loss's shape.
// - "params" stores exactly the row's parameters. Fields that are not parameters of the row are
//   ignored by every consumer; they are not stored and decode to Params{} defaults (for rows
//   without a reduction parameter the decoded reduction is "", meaning the row's default).
//   Doubles are written by nlohmann/json, whose shortest round-trip printing and correctly
//   rounded parsing make them round trip bitwise (tests/core check it on random bit patterns).
// - Metadata keys of a case file are a closed set: unknown keys are rejected (they would be typos
//   such as "wants_grads"). "divcheck.format", "divergence", "params" and "wants_grad" are
//   required; "divcheck.version", "family", "seed" and "note" are optional.
// - decode_case turns validate_case's InvalidArgument into FormatError ("<origin>: invalid case:
//   <argument> = <value>: <why>") so that a caller reading files handles one error type.
// - Result files require metadata "divergence" (equal to the case's); other metadata keys are
//   ignored there, because outside producers annotate their files (e.g. "producer").
#include "core/case_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/version.hpp"

namespace divcheck {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// Deepest nesting accepted in any JSON text we read. A case file needs 3 levels (header object,
// entry object, shape array); the limit only keeps hostile input cheap.
constexpr int kMaxJsonDepth = 16;

// ---------------------------------------------------------------------------------------------
// Message helpers

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
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; }
    else return false;
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

// ---------------------------------------------------------------------------------------------
// Guarded JSON parsing

struct JsonGuardViolation {
  std::string why;
};

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

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// Case metadata

constexpr const char* kKeyFormat = "divcheck.format";
constexpr const char* kKeyVersion = "divcheck.version";
constexpr const char* kKeyDivergence = "divergence";
constexpr const char* kKeyParams = "params";
constexpr const char* kKeyWantsGrad = "wants_grad";
constexpr const char* kKeyFamily = "family";
constexpr const char* kKeySeed = "seed";
constexpr const char* kKeyNote = "note";
constexpr const char* kGradOutput = "grad_output";
constexpr const char* kLoss = "loss";
constexpr const char* kGradPrefix = "grad.";

json finite_number(const DivergenceInfo& d, std::string_view field, double v) {
  // validate_case has already required finiteness for every row parameter; JSON cannot hold
  // NaN or inf (nlohmann would write null), so refuse rather than write a lie.
  if (!std::isfinite(v))
    throw InvalidArgument(std::string(d.name) + ": " + std::string(field), std::to_string(v),
                          "cannot be stored in a case file: not finite");
  return json(v);
}

json params_to_json(const DivergenceInfo& d, const Params& p) {
  json o = json::object();
  for (ParamKind k : d.params) {
    const std::string field(param_name(k));
    switch (k) {
      case ParamKind::log_target: o[field] = p.log_target; break;
      case ParamKind::max_loss: o[field] = p.max_loss ? finite_number(d, field, *p.max_loss) : json(nullptr); break;
      case ParamKind::scaling_factor: o[field] = finite_number(d, field, p.scaling_factor); break;
      case ParamKind::temperature: o[field] = finite_number(d, field, p.temperature); break;
      case ParamKind::reduction: o[field] = p.reduction; break;
      case ParamKind::jsd_beta: o[field] = finite_number(d, field, p.jsd_beta); break;
      case ParamKind::chunk_size: o[field] = p.chunk_size; break;
      case ParamKind::safety_factor: o[field] = finite_number(d, field, p.safety_factor); break;
    }
  }
  return o;
}

Params params_from_json(const DivergenceInfo& d, const std::string& text, const std::string& origin) {
  const std::string where = "metadata \"params\"";
  json o = parse_guarded(text, origin, where);
  if (!o.is_object()) throw FormatError(origin, where + " must be a JSON object, got " + type_of(o) + " " + shown(o));
  auto fail = [&](const std::string& field, const json& v, const std::string& why) {
    return FormatError(origin, where + ": " + field + " = " + shown(v) + " " + why);
  };
  for (const auto& [key, value] : o.items()) {
    bool known = false;
    for (ParamKind k : d.params) known |= (param_name(k) == key);
    if (!known) throw fail(key, value, "is not a parameter of " + std::string(d.name));
  }
  Params p;
  for (ParamKind k : d.params) {
    const std::string field(param_name(k));
    if (!o.contains(field))
      throw FormatError(origin, where + ": missing parameter \"" + field + "\" of " + std::string(d.name));
    const json& v = o[field];
    switch (k) {
      case ParamKind::log_target:
        if (!v.is_boolean()) throw fail(field, v, "must be true or false");
        p.log_target = v.get<bool>();
        break;
      case ParamKind::max_loss:
        if (v.is_null()) p.max_loss.reset();
        else if (v.is_number()) p.max_loss = v.get<double>();
        else throw fail(field, v, "must be null or a number");
        break;
      case ParamKind::reduction:
        if (!v.is_string()) throw fail(field, v, "must be a string");
        p.reduction = v.get<std::string>();
        break;
      case ParamKind::chunk_size:
        if (v.is_number_integer() && !v.is_number_unsigned()) p.chunk_size = v.get<std::int64_t>();
        else if (v.is_number_unsigned() &&
                 v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          p.chunk_size = static_cast<std::int64_t>(v.get<std::uint64_t>());
        else throw fail(field, v, "must be an integer in the int64 range");
        break;
      case ParamKind::scaling_factor:
      case ParamKind::temperature:
      case ParamKind::jsd_beta:
      case ParamKind::safety_factor: {
        if (!v.is_number()) throw fail(field, v, "must be a number");
        double x = v.get<double>();
        if (k == ParamKind::scaling_factor) p.scaling_factor = x;
        if (k == ParamKind::temperature) p.temperature = x;
        if (k == ParamKind::jsd_beta) p.jsd_beta = x;
        if (k == ParamKind::safety_factor) p.safety_factor = x;
        break;
      }
    }
  }
  return p;
}

std::vector<std::string> wants_grad_from_json(const std::string& text, const std::string& origin) {
  const std::string where = "metadata \"wants_grad\"";
  json v = parse_guarded(text, origin, where);
  if (!v.is_array()) throw FormatError(origin, where + " must be a JSON list of role names, got " + shown(v));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw FormatError(origin, where + "[" + std::to_string(i) + "] = " + shown(v[i]) + " must be a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// Canonical decimal: digits only, no sign, no leading zero (except "0"), fits in 64 bits.
std::uint64_t seed_from_string(const std::string& s, const std::string& origin) {
  auto fail = [&] {
    return FormatError(origin, "metadata \"seed\" = " + in_quotes(s) + " must be a decimal integer in [0, 2^64)");
  };
  if (s.empty() || (s.size() > 1 && s[0] == '0')) throw fail();
  for (char c : s)
    if (c < '0' || c > '9') throw fail();
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) throw fail();
  return v;
}

// Loss and gradients must match the case: loss f32 of loss_shape(c), exactly the wanted
// gradients, each in the dtype and shape of its role's tensor. Calls fail(argument, value, why),
// which throws.
template <class Fail>
void check_outputs(const Case& c, const Outputs& o, Fail fail) {
  const Shape ls = loss_shape(c);
  if (o.loss.empty_tensor()) fail("loss", "<empty>", "no loss tensor (a default-constructed Tensor)");
  if (o.loss.dtype() != DType::f32) fail("loss.dtype", std::string(short_name(o.loss.dtype())), "must be f32");
  if (o.loss.shape() != ls) fail("loss.shape", shape_string(o.loss.shape()), "must be the loss shape " + shape_string(ls));
  for (const auto& [role, g] : o.grads) {
    const Tensor* in = c.input(role);
    if (!c.wants(role) || !in) fail("grad." + role, "<tensor>", "this gradient was not requested by the case");
    if (g.dtype() != in->dtype())
      fail("grad." + role + ".dtype", std::string(short_name(g.dtype())),
           "must be the dtype of " + role + ", " + std::string(short_name(in->dtype())));
    if (g.shape() != in->shape())
      fail("grad." + role + ".shape", shape_string(g.shape()), "must be the shape of " + role + ", " + shape_string(in->shape()));
  }
  for (const auto& role : c.wants_grad)
    if (!o.grads.count(role)) fail("grad." + role, "None", "the case requests this gradient");
}

}  // namespace

// =============================================================================================
// Generic safetensors container

std::vector<std::byte> encode_safetensors(const SafeTensors& st) {
  ordered_json header = ordered_json::object();
  if (!st.metadata.empty()) {
    ordered_json meta = ordered_json::object();
    for (const auto& [key, value] : st.metadata) {
      if (!valid_utf8(key)) throw InvalidArgument("metadata key", in_quotes(key), "is not valid UTF-8");
      if (!valid_utf8(value)) throw InvalidArgument("metadata[" + in_quotes(key) + "]", in_quotes(value), "is not valid UTF-8");
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
    throw FormatError(origin, "file is " + std::to_string(bytes.size()) +
                                  " bytes, shorter than the 8-byte header length field");
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
    if (name == "__metadata__") st.metadata = parse_metadata(value, origin);
    else entries.push_back(parse_entry(name, value, data_size, origin));
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

// =============================================================================================
// Cases

std::vector<std::byte> encode_case(const Case& c) {
  validate_case(c);
  const DivergenceInfo& d = info(c.id);
  const Shape ls = loss_shape(c);

  SafeTensors st;
  st.tensors = c.inputs;
  if (c.grad_output.empty_tensor()) {
    st.tensors.emplace(kGradOutput, Tensor(DType::f32, ls));  // never set: zeros (see the file comment)
  } else {
    if (c.grad_output.dtype() != DType::f32)
      throw InvalidArgument(std::string(d.name) + ": grad_output.dtype", std::string(short_name(c.grad_output.dtype())),
                            "must be f32");
    if (c.grad_output.shape() != ls)
      throw InvalidArgument(std::string(d.name) + ": grad_output.shape", shape_string(c.grad_output.shape()),
                            "must equal the loss shape " + shape_string(ls));
    st.tensors.emplace(kGradOutput, c.grad_output);
  }
  st.metadata[kKeyFormat] = std::to_string(kCaseFileFormatVersion);
  st.metadata[kKeyVersion] = kVersion;
  st.metadata[kKeyDivergence] = std::string(d.name);
  st.metadata[kKeyParams] = params_to_json(d, c.params).dump();
  st.metadata[kKeyWantsGrad] = json(c.wants_grad).dump();
  st.metadata[kKeyFamily] = c.provenance.family;
  st.metadata[kKeySeed] = std::to_string(c.provenance.seed);
  st.metadata[kKeyNote] = c.provenance.note;
  return encode_safetensors(st);
}

Case decode_case(const std::vector<std::byte>& bytes, const std::string& origin) {
  SafeTensors st = decode_safetensors(bytes, origin);
  const auto& m = st.metadata;
  static const std::set<std::string> kKnown = {kKeyFormat, kKeyVersion, kKeyDivergence, kKeyParams,
                                               kKeyWantsGrad, kKeyFamily, kKeySeed, kKeyNote};
  for (const auto& [key, value] : m)
    if (!kKnown.count(key))
      throw FormatError(origin, "metadata " + in_quotes(key) + " = " + in_quotes(value) + " is not a case-file field");
  auto required = [&](const char* key) -> const std::string& {
    auto it = m.find(key);
    if (it == m.end()) throw FormatError(origin, std::string("metadata \"") + key + "\" is missing (not a divcheck case file?)");
    return it->second;
  };
  auto optional = [&](const char* key) -> const std::string* {
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  };

  const std::string& format = required(kKeyFormat);
  if (format != std::to_string(kCaseFileFormatVersion))
    throw FormatError(origin, "metadata \"divcheck.format\" = " + in_quotes(format) + " is not supported (this build reads " +
                                  std::to_string(kCaseFileFormatVersion) + ")");
  const std::string& name = required(kKeyDivergence);
  const DivergenceInfo* d = find_divergence(name);
  if (!d) throw FormatError(origin, "metadata \"divergence\" = " + in_quotes(name) + " is not a known divergence");

  Case c;
  c.id = d->id;
  c.params = params_from_json(*d, required(kKeyParams), origin);
  c.wants_grad = wants_grad_from_json(required(kKeyWantsGrad), origin);
  if (const std::string* s = optional(kKeyFamily)) c.provenance.family = *s;
  if (const std::string* s = optional(kKeySeed)) c.provenance.seed = seed_from_string(*s, origin);
  if (const std::string* s = optional(kKeyNote)) c.provenance.note = *s;

  auto go = st.tensors.find(kGradOutput);
  if (go == st.tensors.end()) throw FormatError(origin, "tensor \"grad_output\" is missing");
  c.grad_output = std::move(go->second);
  st.tensors.erase(go);
  c.inputs = std::move(st.tensors);

  try {
    validate_case(c);
  } catch (const InvalidArgument& e) {
    throw FormatError(origin, std::string("invalid case: ") + e.what());
  }
  const Shape ls = loss_shape(c);
  if (c.grad_output.dtype() != DType::f32)
    throw FormatError(origin, "tensor \"grad_output\": dtype " + std::string(safetensors_name(c.grad_output.dtype())) +
                                  " must be F32");
  if (c.grad_output.shape() != ls)
    throw FormatError(origin, "tensor \"grad_output\": shape " + shape_string(c.grad_output.shape()) +
                                  " must be the loss shape " + shape_string(ls));
  return c;
}

void write_case(const std::string& path, const Case& c) { write_file_bytes(path, encode_case(c)); }

Case read_case(const std::string& path) { return decode_case(read_file_bytes(path), path); }

// =============================================================================================
// External results

std::vector<std::byte> encode_outputs(const Case& c, const Outputs& o) {
  validate_case(c);
  const std::string where = std::string(name_of(c.id)) + ": outputs.";
  check_outputs(c, o, [&](const std::string& argument, const std::string& value, const std::string& why) {
    throw InvalidArgument(where + argument, value, why);
  });
  SafeTensors st;
  st.tensors.emplace(kLoss, o.loss);
  for (const auto& [role, g] : o.grads) st.tensors.emplace(kGradPrefix + role, g);
  st.metadata[kKeyFormat] = std::to_string(kCaseFileFormatVersion);
  st.metadata[kKeyVersion] = kVersion;
  st.metadata[kKeyDivergence] = std::string(name_of(c.id));
  return encode_safetensors(st);
}

Outputs decode_outputs(const Case& c, const std::vector<std::byte>& bytes, const std::string& origin) {
  validate_case(c);  // the case is the caller's, not the file's: its errors stay InvalidArgument
  SafeTensors st = decode_safetensors(bytes, origin);
  auto div = st.metadata.find(kKeyDivergence);
  if (div == st.metadata.end()) throw FormatError(origin, "metadata \"divergence\" is missing");
  if (div->second != name_of(c.id))
    throw FormatError(origin, "metadata \"divergence\" = " + in_quotes(div->second) + " but the case is " +
                                  std::string(name_of(c.id)));
  auto fmt = st.metadata.find(kKeyFormat);
  if (fmt != st.metadata.end() && fmt->second != std::to_string(kCaseFileFormatVersion))
    throw FormatError(origin, "metadata \"divcheck.format\" = " + in_quotes(fmt->second) + " is not supported");

  Outputs o;
  bool have_loss = false;
  for (auto& [name, t] : st.tensors) {
    if (name == kLoss) {
      o.loss = std::move(t);
      have_loss = true;
    } else if (name.starts_with(kGradPrefix)) {
      std::string role = name.substr(std::strlen(kGradPrefix));
      if (!c.wants(role))
        throw FormatError(origin, "tensor " + in_quotes(name) + ": the case does not request the gradient of " + in_quotes(role));
      o.grads.emplace(role, std::move(t));
    } else {
      throw FormatError(origin, "tensor " + in_quotes(name) + " is neither \"loss\" nor \"grad.<role>\"");
    }
  }
  if (!have_loss) throw FormatError(origin, "tensor \"loss\" is missing");
  check_outputs(c, o, [&](const std::string& argument, const std::string& value, const std::string& why) {
    throw FormatError(origin, argument + " = " + value + ": " + why);
  });
  return o;
}

void write_outputs(const std::string& path, const Case& c, const Outputs& o) {
  write_file_bytes(path, encode_outputs(c, o));
}

Outputs read_outputs(const std::string& path, const Case& c) { return decode_outputs(c, read_file_bytes(path), path); }

// =============================================================================================
// Files

namespace {
std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

std::vector<std::byte> read_file_bytes(const std::string& path) {
  FileDescriptor f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw FormatError(path, "cannot open for reading: " + errno_text(errno));
  struct stat info {};
  if (::fstat(f.fd, &info) != 0) throw FormatError(path, "cannot stat: " + errno_text(errno));
  if (S_ISDIR(info.st_mode)) throw FormatError(path, "is a directory, not a file");
  const bool regular = S_ISREG(info.st_mode);
  if (regular && static_cast<std::uint64_t>(info.st_size) > kMaxCaseFileBytes)
    throw FormatError(path, "file is " + std::to_string(info.st_size) + " bytes, larger than the limit of " +
                                std::to_string(kMaxCaseFileBytes) + " bytes");
  // read(2) into bytes[filled, bytes.size()); returns 0 at the end of the file.
  std::vector<std::byte> bytes;
  std::size_t filled = 0;
  auto read_some = [&]() -> std::size_t {
    for (;;) {
      const ssize_t got = ::read(f.fd, bytes.data() + filled, bytes.size() - filled);
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno != EINTR) throw FormatError(path, "cannot read: " + errno_text(errno));
    }
  };
  if (regular && info.st_size > 0) {
    // Exactly its size (a file that shrinks meanwhile gives what was there).
    bytes.resize(static_cast<std::size_t>(info.st_size));
    while (filled < bytes.size()) {
      const std::size_t got = read_some();
      if (got == 0) break;
      filled += got;
    }
  } else {
    // A pipe, /dev/stdin, or a file whose size is not known in advance (procfs): chunks, up to
    // the same limit.
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    for (;;) {
      if (filled == bytes.size()) bytes.resize(std::min(filled + kChunk, kMaxCaseFileBytes + 1));
      const std::size_t got = read_some();
      if (got == 0) break;
      filled += got;
      if (filled > kMaxCaseFileBytes)
        throw FormatError(path, "file is larger than the limit of " + std::to_string(kMaxCaseFileBytes) + " bytes");
    }
  }
  bytes.resize(filled);
  return bytes;
}

void write_file_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  FileDescriptor f{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (f.fd < 0) throw FormatError(path, "cannot open for writing: " + errno_text(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t put = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (put < 0) {
      if (errno == EINTR) continue;
      throw FormatError(path, "cannot write: " + errno_text(errno));
    }
    done += static_cast<std::size_t>(put);
  }
  int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) throw FormatError(path, "cannot write (close failed): " + errno_text(errno));
}

}  // namespace divcheck

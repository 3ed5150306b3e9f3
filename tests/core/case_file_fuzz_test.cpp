// Fuzzing the case-file reader with RapidCheck: arbitrary bytes, arbitrary headers behind an
// honest length, byte-level mutations of valid case files (flips, truncations, header-length
// lies, insertions) and structure-aware edits of their headers (offsets, shapes, dtypes, fields,
// metadata, params). decode_case must either accept (and then the case re-encodes to a file that
// decodes to the same bytes again) or throw FormatError / InvalidArgument; anything else -- another
// exception, a crash, a sanitizer report -- fails. RC_TAG shows the mix of outcomes per property.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/case_file.hpp"
#include "core/errors.hpp"
#include "tests/core/sample_cases.hpp"

namespace divcheck {
namespace {

using nlohmann::ordered_json;
using testing::SampleOptions;

// Which check rejected a file, from the message (most specific phrases first).
std::string category(const std::string& what) {
  static const std::pair<const char*, const char*> kPhrases[] = {
      {"shorter than the 8-byte", "file too short"},
      {"metadata \"params\"", "params"},
      {"metadata \"wants_grad\"", "wants_grad"},
      {"header length", "header length"},
      {"nesting deeper", "JSON too deep"},
      {"duplicate key", "duplicate key"},
      {"is not valid JSON", "JSON syntax"},
      {"header must be a JSON object", "header not an object"},
      {"invalid case:", "validate_case"},
      {"overlaps", "overlap"},
      {"hole in the data section", "hole"},
      {"trailing bytes", "trailing bytes"},
      {"entry must be", "entry not an object"},
      {"unknown field", "entry field"},
      {"missing field", "entry field"},
      {": dtype", "dtype"},
      {": shape", "shape"},
      {": data_offsets", "data_offsets"},
      {"__metadata__", "metadata type"},
      {"metadata \"seed\"", "seed"},
      {"metadata \"divergence\"", "divergence"},
      {"metadata \"divcheck.format\"", "format version"},
      {"is missing", "missing field or tensor"},
      {"is not a case-file field", "unknown metadata"},
      {"grad_output", "grad_output"},
  };
  for (auto [phrase, name] : kPhrases)
    if (what.find(phrase) != std::string::npos) return name;
  return "other: " + what.substr(0, 120);
}

// The property every input must satisfy. Returns the outcome for RC_TAG.
std::string decode_outcome(const std::vector<std::byte>& bytes) {
  Case c;
  try {
    c = decode_case(bytes, "<fuzz>");
  } catch (const FormatError& e) {
    return "rejected: " + category(e.what());
  } catch (const InvalidArgument& e) {
    return std::string("rejected (InvalidArgument): ") + e.what();
  } catch (const std::exception& e) {
    RC_FAIL(std::string("decode_case threw something other than FormatError/InvalidArgument: ") + e.what());
  }
  std::vector<std::byte> again;
  try {
    again = encode_case(c);
  } catch (const std::exception& e) {
    RC_FAIL(std::string("an accepted case does not re-encode: ") + e.what());
  }
  try {
    const Case c2 = decode_case(again, "<re-encoded>");
    RC_ASSERT(encode_case(c2) == again);
  } catch (const std::exception& e) {
    RC_FAIL(std::string("a re-encoded case does not decode: ") + e.what());
  }
  return "accepted";
}

std::vector<std::byte> to_bytes(const std::vector<std::uint8_t>& v) {
  std::vector<std::byte> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = static_cast<std::byte>(v[i]);
  return b;
}

std::uint64_t header_length(const std::vector<std::byte>& f) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<std::uint64_t>(f[static_cast<std::size_t>(i)]);
  return n;
}

void set_header_length(std::vector<std::byte>& f, std::uint64_t n) {
  for (int i = 0; i < 8; ++i) f[static_cast<std::size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
}

// A uniform choice in [lo, hi): rc::gen::inRange scales its range with the size parameter (size 0
// always gives lo), which would skew the mix of rows and mutation kinds toward the first ones.
template <class T>
T pick(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

// A valid case file of a random row, dtype, mask dtype, size and parameter draw.
std::vector<std::byte> valid_case_file() {
  const auto row = pick<int>(0, static_cast<int>(kNumDivergences));
  SampleOptions o;
  o.float_dtype = testing::kFloatDTypes[pick<int>(0, 3)];
  o.mask_dtype = testing::kMaskDTypes[pick<int>(0, 6)];
  o.label_dtype = testing::kLabelDTypes[pick<int>(0, 5)];
  o.B = *rc::gen::inRange<std::int64_t>(1, 3);
  o.T = *rc::gen::inRange<std::int64_t>(1, 3);
  o.V = *rc::gen::inRange<std::int64_t>(1, 5);
  o.N = *rc::gen::inRange<std::int64_t>(1, 4);
  o.H = *rc::gen::inRange<std::int64_t>(1, 3);
  o.random_params = *rc::gen::arbitrary<bool>();
  o.with_optional = *rc::gen::arbitrary<bool>();
  o.all_grads = *rc::gen::arbitrary<bool>();
  const auto seed = *rc::gen::resize(100, rc::gen::arbitrary<std::uint64_t>());
  return encode_case(testing::sample_case(static_cast<DivergenceId>(row), seed, o));
}

// (a) Arbitrary byte strings.
RC_GTEST_PROP(CaseFileFuzz, ArbitraryBytes, (const std::vector<std::uint8_t>& raw)) {
  RC_TAG(decode_outcome(to_bytes(raw)));
}

// (a') Arbitrary header text behind an honest length field, so the JSON parser sees it: raw
// bytes, or a soup of the tokens a header is made of.
RC_GTEST_PROP(CaseFileFuzz, ArbitraryHeaderWithHonestLength, ()) {
  static const std::vector<std::string> kTokens = {
      "{", "}", "[", "]", ":", ",", "\"t\"", "\"dtype\"", "\"F32\"", "\"U8\"", "\"shape\"", "\"data_offsets\"",
      "\"__metadata__\"", "\"divergence\"", "\"params\"", "0", "1", "4", "-1", "1.5", "1e400", "\"x\"", "null",
      "true", " ", "\"\\u0000\"", "\"\\ud800\"", "18446744073709551616"};
  std::string header;
  if (*rc::gen::arbitrary<bool>()) {
    for (auto b : *rc::gen::arbitrary<std::vector<std::uint8_t>>()) header.push_back(static_cast<char>(b));
  } else {
    for (auto i : *rc::gen::container<std::vector<std::size_t>>(rc::gen::inRange<std::size_t>(0, kTokens.size())))
      header += kTokens[i];
  }
  std::vector<std::byte> f(8);
  set_header_length(f, header.size());
  for (char ch : header) f.push_back(static_cast<std::byte>(ch));
  const auto data_size = *rc::gen::inRange<std::size_t>(0, 16);
  for (auto b : *rc::gen::container<std::vector<std::uint8_t>>(data_size, rc::gen::arbitrary<std::uint8_t>()))
    f.push_back(static_cast<std::byte>(b));
  RC_TAG(decode_outcome(f));
}

// (b) Byte-level mutations of valid case files.
RC_GTEST_PROP(CaseFileFuzz, MutatedValidFiles, ()) {
  std::vector<std::byte> f = valid_case_file();
  RC_ASSERT(decode_outcome(f) == "accepted");
  const std::uint64_t n = header_length(f);
  const int kind = pick(0, 7);
  switch (kind) {
    case 0:  // flip bytes anywhere
    case 1: {  // flip bytes inside the header
      const int flips = *rc::gen::inRange(1, 5);
      for (int k = 0; k < flips; ++k) {
        const std::size_t lo = kind == 0 ? 0 : 8, hi = kind == 0 ? f.size() : 8 + n;
        const auto at = pick<std::size_t>(lo, hi);
        f[at] ^= static_cast<std::byte>(*rc::gen::inRange<int>(1, 256));
      }
      RC_TAG(kind == 0 ? "flip anywhere" : "flip in header");
      break;
    }
    case 2:  // truncate
      f.resize(pick<std::size_t>(0, f.size()));
      RC_TAG("truncate");
      break;
    case 3: {  // header length lie: near the truth or anything
      std::uint64_t lie = *rc::gen::arbitrary<bool>() ? n + static_cast<std::uint64_t>(*rc::gen::inRange<int>(-64, 65))
                                                       : *rc::gen::arbitrary<std::uint64_t>();
      set_header_length(f, lie);
      RC_TAG("length lie");
      break;
    }
    case 4: {  // append bytes
      for (auto b : *rc::gen::nonEmpty<std::vector<std::uint8_t>>()) f.push_back(static_cast<std::byte>(b));
      RC_TAG("append");
      break;
    }
    case 5: {  // insert a byte
      const auto at = pick<std::size_t>(0, f.size() + 1);
      f.insert(f.begin() + static_cast<std::ptrdiff_t>(at), static_cast<std::byte>(*rc::gen::arbitrary<std::uint8_t>()));
      RC_TAG("insert");
      break;
    }
    default: {  // delete a byte
      const auto at = pick<std::size_t>(0, f.size());
      f.erase(f.begin() + static_cast<std::ptrdiff_t>(at));
      RC_TAG("delete");
      break;
    }
  }
  RC_TAG(decode_outcome(f));
}

// A JSON value from a pool of awkward ones.
ordered_json awkward_value() {
  switch (pick(0, 14)) {
    case 0: return -1;
    case 1: return 0;
    case 2: return *rc::gen::inRange<std::uint64_t>(0, 64);
    case 3: return *rc::gen::arbitrary<std::uint64_t>();
    case 4: return 1.5;
    case 5: return 4.0;
    case 6: return "x";
    case 7: return nullptr;
    case 8: return true;
    case 9: return ordered_json::array();
    case 10: return ordered_json::object();
    case 11: return ordered_json::array({0, 4});
    case 12: return std::int64_t{-9223372036854775807 - 1};
    default: return "";
  }
}

// (b') Structure-aware edits of valid case files: the header is parsed, one thing is changed, and
// the file is reassembled with an honest length (so the edit reaches the deeper checks).
RC_GTEST_PROP(CaseFileFuzz, EditedValidFiles, ()) {
  const std::vector<std::byte> f = valid_case_file();
  const std::uint64_t n = header_length(f);
  ordered_json h = ordered_json::parse(std::string(reinterpret_cast<const char*>(f.data() + 8), n));
  std::vector<std::string> tensors;
  for (auto it = h.begin(); it != h.end(); ++it)
    if (it.key() != "__metadata__") tensors.push_back(it.key());
  auto& meta = h["__metadata__"];
  const std::string t = tensors[pick<std::size_t>(0, tensors.size())];
  auto& e = h[t];
  const int kind = pick(0, 12);
  switch (kind) {
    case 0: {  // offset nudge
      auto& off = e["data_offsets"][*rc::gen::inRange(0, 2)];
      off = off.get<std::int64_t>() + *rc::gen::inRange<std::int64_t>(-8, 9);
      RC_TAG("offset nudge");
      break;
    }
    case 1:  // offset replaced
      e["data_offsets"][*rc::gen::inRange(0, 2)] = awkward_value();
      RC_TAG("offset replaced");
      break;
    case 2: {  // shape dimension changed, added or removed
      auto& shape = e["shape"];
      const int what = *rc::gen::inRange(0, 3);
      if (what == 0 && !shape.empty()) shape[*rc::gen::inRange<std::size_t>(0, shape.size())] = awkward_value();
      else if (what == 1) shape.push_back(*rc::gen::inRange<std::int64_t>(0, 3));
      else if (!shape.empty()) shape.erase(shape.size() - 1);
      RC_TAG("shape edit");
      break;
    }
    case 3: {  // dtype replaced
      static const char* kNames[] = {"F32", "BF16", "F16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", ""};
      e["dtype"] = kNames[*rc::gen::inRange(0, 12)];
      RC_TAG("dtype edit");
      break;
    }
    case 4: {  // entry field removed, added or replaced
      const int what = *rc::gen::inRange(0, 3);
      static const char* kFields[] = {"dtype", "shape", "data_offsets"};
      if (what == 0) e.erase(kFields[*rc::gen::inRange(0, 3)]);
      else if (what == 1) e["extra"] = 0;
      else e = awkward_value();
      RC_TAG("entry edit");
      break;
    }
    case 5: {  // two tensors swap their offsets (accepted when the sizes agree)
      const std::string u = tensors[pick<std::size_t>(0, tensors.size())];
      std::swap(h[t]["data_offsets"], h[u]["data_offsets"]);
      RC_TAG("offset swap");
      break;
    }
    case 6: {  // tensor renamed (to a role, to grad_output, to nonsense)
      static const char* kNames[] = {"grad_output", "input_logits", "p", "q", "labels", "support_mask", "x", ""};
      ordered_json moved = e;
      h.erase(t);
      h[kNames[*rc::gen::inRange(0, 8)]] = moved;
      RC_TAG("rename");
      break;
    }
    case 7: {  // metadata value replaced by a random string
      static const char* kKeys[] = {"divcheck.format", "divergence", "params", "wants_grad", "seed", "family", "note",
                                    "divcheck.version", "other"};
      std::string value;
      for (auto b : *rc::gen::container<std::vector<char>>(rc::gen::inRange<char>(32, 127))) value.push_back(b);
      meta[kKeys[*rc::gen::inRange(0, 9)]] = value;
      RC_TAG("metadata string");
      break;
    }
    case 8: {  // metadata key removed, or metadata replaced by a non-object
      if (*rc::gen::arbitrary<bool>()) {
        static const char* kKeys[] = {"divcheck.format", "divergence", "params", "wants_grad", "seed"};
        meta.erase(kKeys[*rc::gen::inRange(0, 5)]);
      } else {
        meta = awkward_value();
      }
      RC_TAG("metadata removal");
      break;
    }
    case 9: {  // one params field replaced, removed or added
      ordered_json p = ordered_json::parse(meta["params"].get<std::string>());
      static const char* kFields[] = {"log_target", "max_loss", "scaling_factor", "temperature",
                                      "reduction", "jsd_beta", "chunk_size", "safety_factor"};
      const char* field = kFields[*rc::gen::inRange(0, 8)];
      if (*rc::gen::inRange(0, 4) == 0) p.erase(field);
      else p[field] = awkward_value();
      meta["params"] = p.dump();
      RC_TAG("params edit");
      break;
    }
    case 10: {  // wants_grad replaced
      static const char* kLists[] = {"[]", "[\"p\"]", "[\"q\"]", "[\"input_logits\",\"input_logits\"]",
                                     "[\"teacher_hidden\"]", "[1]", "{}", "[\"student_hidden\",\"lm_head_weight\"]"};
      meta["wants_grad"] = kLists[*rc::gen::inRange(0, 8)];
      RC_TAG("wants_grad edit");
      break;
    }
    default: {  // divergence swapped for another row (tensors then mostly do not fit)
      meta["divergence"] = std::string(name_of(static_cast<DivergenceId>(*rc::gen::inRange<int>(0, 12))));
      RC_TAG("divergence swap");
      break;
    }
  }
  std::string text = h.dump();
  std::vector<std::byte> g(8);
  set_header_length(g, text.size());
  for (char ch : text) g.push_back(static_cast<std::byte>(ch));
  g.insert(g.end(), f.begin() + static_cast<std::ptrdiff_t>(8 + n), f.end());
  RC_TAG(decode_outcome(g));
}

}  // namespace
}  // namespace divcheck

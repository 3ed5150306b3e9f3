// Case files that must be rejected: hand-made malformed safetensors files, one per check of the
// decoder, and case/result files whose metadata or tensors are wrong. Each must throw
// FormatError whose message names the problem and the offending value; none may crash.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/case_file.hpp"
#include "tests/core/case_file_helpers.hpp"
#include "tests/core/sample_cases.hpp"

namespace divcheck {
namespace {

using namespace divcheck::testing;

std::vector<std::byte> zeros(std::size_t n) { return std::vector<std::byte>(n); }

void expect_rejected(const std::vector<std::byte>& file, const std::vector<std::string>& needles) {
  expect_format_error([&] { (void)decode_safetensors(file, "<t>"); }, needles);
}
void expect_rejected(std::string_view header, const std::vector<std::byte>& data,
                     const std::vector<std::string>& needles) {
  expect_rejected(file_with(header, data), needles);
}

// One-tensor header with the given entry body.
std::string one(const std::string& entry) { return "{\"t\":" + entry + "}"; }

TEST(Malformed, ShorterThanTheLengthField) {
  for (std::size_t n = 0; n < 8; ++n) expect_rejected(zeros(n), {"<t>: file is " + std::to_string(n) + " bytes"});
}

TEST(Malformed, HeaderLength) {
  expect_rejected(file_with("", {}), {"header length is 0"});
  expect_rejected(file_with("{}", {}, 0), {"header length is 0"});
  // Beyond the limit: refused before anything is read or allocated.
  expect_rejected(file_with("{}", {}, kMaxHeaderBytes + 1), {"header length 104857601 exceeds the limit"});
  expect_rejected(file_with("{}", {}, std::numeric_limits<std::uint64_t>::max()),
                  {"header length 18446744073709551615 exceeds"});
  expect_rejected(file_with("{}", {}, 3), {"header length 3 extends beyond the end of the file (2 bytes"});
  expect_rejected(file_with("{}", {}, 1), {"header is not valid JSON"});  // "{" alone
}

TEST(Malformed, HeaderNotJson) {
  for (const char* h : {"{", "{\"a\":}", "nul", "{} x", "{\"a\":1,}", "/* c */ {}", "{'a':1}", "\x01{}",
                        "{\"a\":\"\xff\"}", "{\"a\":\"\\ud800\"}", "{\"a\":1e999}"}) {
    SCOPED_TRACE(h);
    expect_rejected(h, {}, {"header is not valid JSON"});
  }
  // nlohmann stops at a raw NUL; the decoder must not ignore what follows it.
  expect_rejected(std::string_view("{}\0\0", 4), {}, {"header is not valid JSON: raw NUL byte at offset 2"});
  expect_rejected(std::string_view("{}\0garbage", 10), {}, {"raw NUL byte"});
  expect_rejected(std::string_view("{\"a\":\"x\0y\"}", 11), {}, {"raw NUL byte at offset 7"});
}

TEST(Malformed, HeaderNotAnObject) {
  expect_rejected("[]", {}, {"header must be a JSON object, got an array []"});
  expect_rejected("3", {}, {"header must be a JSON object, got an integer 3"});
  expect_rejected("\"s\"", {}, {"header must be a JSON object"});
  expect_rejected("null", {}, {"header must be a JSON object, got null"});
}

TEST(Malformed, DeepNestingIsRejectedWithoutCrashing) {
  for (std::size_t depth : {17u, 1000u, 1000000u}) {
    std::string h = "{\"__metadata__\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
    expect_rejected(h, {}, {"header: nesting deeper than 16 levels"});
    std::string objs;
    for (std::size_t i = 0; i < depth; ++i) objs += "{\"a\":";
    objs += "1" + std::string(depth, '}');
    expect_rejected(objs, {}, {"nesting deeper"});
  }
}

TEST(Malformed, DuplicateKeys) {
  const std::string e = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  expect_rejected("{\"t\":" + e + ",\"t\":" + e + "}", zeros(1), {"duplicate key \"t\""});
  expect_rejected(one(R"({"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]})"), zeros(1),
                  {"duplicate key \"dtype\""});
  expect_rejected(R"({"__metadata__":{"a":"1","a":"2"}})", {}, {"duplicate key \"a\""});
  expect_rejected(R"({"__metadata__":{},"__metadata__":{}})", {}, {"duplicate key \"__metadata__\""});
}

TEST(Malformed, EntryNotAnObjectOrWrongFields) {
  expect_rejected(one("3"), {}, {"tensor \"t\": entry must be a JSON object, got an integer 3"});
  expect_rejected(one("[]"), {}, {"tensor \"t\": entry must be a JSON object"});
  expect_rejected(one("null"), {}, {"tensor \"t\": entry must be a JSON object"});
  expect_rejected(one(R"({"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":0})"), zeros(1),
                  {"tensor \"t\": unknown field \"extra\""});
  expect_rejected(one(R"({"shape":[1],"data_offsets":[0,1]})"), zeros(1), {"missing field \"dtype\""});
  expect_rejected(one(R"({"dtype":"U8","data_offsets":[0,1]})"), zeros(1), {"missing field \"shape\""});
  expect_rejected(one(R"({"dtype":"U8","shape":[1]})"), zeros(1), {"missing field \"data_offsets\""});
}

TEST(Malformed, UnknownDType) {
  for (const char* dt : {"\"F8_E4M3\"", "\"f32\"", "\"\"", "\"U16\""}) {
    expect_rejected(one(std::string(R"({"dtype":)") + dt + R"(,"shape":[1],"data_offsets":[0,1]})"), zeros(1),
                    {std::string("dtype = ") + dt + " is not supported"});
  }
  expect_rejected(one(R"({"dtype":3,"shape":[1],"data_offsets":[0,1]})"), zeros(1), {"dtype = 3 must be a string"});
}

TEST(Malformed, Shape) {
  auto entry = [](const std::string& shape) {
    return one(R"({"dtype":"U8","shape":)" + shape + R"(,"data_offsets":[0,1]})");
  };
  expect_rejected(entry("[-1]"), zeros(1), {"shape[0] = -1 is not a non-negative integer"});
  expect_rejected(entry("[1,2.0]"), zeros(1), {"shape[1] = 2.0 is not a non-negative integer"});
  expect_rejected(entry("[1e3]"), zeros(1), {"shape[0] = 1000.0 is not"});
  expect_rejected(entry("[\"2\"]"), zeros(1), {"shape[0] = \"2\" is not"});
  expect_rejected(entry("[true]"), zeros(1), {"shape[0] = true is not"});
  expect_rejected(entry("[[1]]"), zeros(1), {"shape[0] = [1] is not"});
  expect_rejected(entry("2"), zeros(1), {"shape = 2 must be a list"});
  expect_rejected(entry("null"), zeros(1), {"shape = null must be a list"});
  // 2^63 does not fit int64; 2^64 is beyond every integer type (parsed as a float).
  expect_rejected(entry("[9223372036854775808]"), zeros(1), {"shape[0] = 9223372036854775808 is not"});
  expect_rejected(entry("[18446744073709551616]"), zeros(1), {"shape[0] = 1.8446744073709552e+19 is not"});
  // numel overflows int64: 2^32 * 2^32.
  expect_rejected(entry("[4294967296,4294967296]"), zeros(1), {"shape = (4294967296, 4294967296) has more elements"});
  // numel fits (2^62) but bytes do not (F64: 2^65).
  expect_rejected(one(R"({"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,1]})"), zeros(1),
                  {"has more bytes than fit in 64 bits"});
}

TEST(Malformed, DataOffsets) {
  auto entry = [](const std::string& offsets) {
    return one(R"({"dtype":"F32","shape":[2],"data_offsets":)" + offsets + "}");
  };
  for (const char* bad : {"[0]", "[0,8,8]", "8", "[-1,7]", "[0,8.0]", "[\"0\",8]", "null", "[0,null]"})
    expect_rejected(entry(bad), zeros(8), {std::string("data_offsets = ") + bad + " must be a list of two"});
  expect_rejected(entry("[8,0]"), zeros(8), {"data_offsets = [8,0] has begin > end"});
  // A lying header: the span does not match dtype and shape.
  expect_rejected(entry("[0,4]"), zeros(4), {"data_offsets = [0,4] span 4 bytes, but dtype F32 with shape (2) needs 8"});
  expect_rejected(entry("[0,12]"), zeros(12), {"span 12 bytes"});
  // Outside the data section (no allocation happens for the huge ones).
  expect_rejected(entry("[4,12]"), zeros(8), {"data_offsets = [4,12] end beyond the data section of 8 bytes"});
  expect_rejected(one(R"({"dtype":"F32","shape":[2305843009213693952],"data_offsets":[0,9223372036854775808]})"),
                  zeros(8), {"end beyond the data section"});
  expect_rejected(entry("[18446744073709551608,18446744073709551615]"), zeros(8), {"span 7 bytes"});
}

TEST(Malformed, TensorsMustTileTheDataSection) {
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":)";
  const std::string b = R"("b":{"dtype":"F32","shape":[2],"data_offsets":)";
  expect_rejected("{" + a + "[0,8]}," + b + "[4,12]}}", zeros(12),
                  {"tensor \"b\" at data_offsets [4, 12] overlaps tensor \"a\" at [0, 8]"});
  expect_rejected("{" + a + "[0,8]}," + b + "[0,8]}}", zeros(8), {"overlaps"});
  expect_rejected("{" + a + "[0,8]}," + b + "[12,20]}}", zeros(20),
                  {"hole in the data section: bytes [8, 12) belong to no tensor"});
  expect_rejected(one(R"({"dtype":"F32","shape":[2],"data_offsets":[4,12]})"), zeros(12), {"bytes [0, 4)"});
  expect_rejected(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})"), zeros(10),
                  {"trailing bytes: the data section has 10 bytes but the tensors end at 8"});
  expect_rejected("{}", zeros(1), {"trailing bytes"});
  // An empty tensor inside another one's bytes is an overlap too (the reference rejects it).
  expect_rejected("{" + a + "[0,8]}," + R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})", zeros(8),
                  {"overlaps"});
  // ...but empty tensors at the boundaries are fine.
  EXPECT_NO_THROW((void)decode_safetensors(
      file_with("{" + a + "[0,8]}," + R"("e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}})", zeros(8)), "<ok>"));
}

TEST(Malformed, Metadata) {
  expect_rejected(R"({"__metadata__":[]})", {}, {"__metadata__ must be a JSON object of strings, got an array []"});
  expect_rejected(R"({"__metadata__":null})", {}, {"__metadata__ must be a JSON object of strings, got null"});
  expect_rejected(R"({"__metadata__":"x"})", {}, {"__metadata__ must be"});
  expect_rejected(R"({"__metadata__":{"a":1}})", {}, {"__metadata__[\"a\"] = 1 must be a string"});
  expect_rejected(R"({"__metadata__":{"a":{"b":"c"}}})", {}, {"__metadata__[\"a\"] = {\"b\":\"c\"} must be"});
}

// Every proper prefix of a valid case file is rejected with a FormatError (never a crash), and so
// is the file with one extra byte.
TEST(Malformed, EveryTruncationOfAValidCaseFile) {
  for (const auto& d : registry()) {
    SampleOptions o;
    o.B = 1;
    o.T = 2;
    o.V = 3;
    o.N = 2;
    o.H = 2;
    const auto bytes = encode_case(sample_case(d.id, 31, o));
    ASSERT_NO_THROW((void)decode_case(bytes, "<full>"));
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
      try {
        (void)decode_case(cut, "<cut>");
        ADD_FAILURE() << d.name << ": prefix of " << n << " bytes accepted";
      } catch (const FormatError&) {
      }
    }
    auto longer = bytes;
    longer.push_back(std::byte{0});
    expect_format_error([&] { (void)decode_case(longer, "<t>"); }, {"trailing bytes"});
  }
}

// ---------------------------------------------------------------------------------------------
// Case-level checks: take a valid case file apart, break one thing, put it back together.

SafeTensors parts_of(const Case& c) { return decode_safetensors(encode_case(c), "<parts>"); }

void expect_case_rejected(const SafeTensors& st, const std::vector<std::string>& needles) {
  const auto bytes = encode_safetensors(st);
  expect_format_error([&] { (void)decode_case(bytes, "<case>"); }, needles);
}

TEST(MalformedCase, MetadataFields) {
  const Case c = sample_case(DivergenceId::fused_linear_masked_kl_divergence, 40);
  const SafeTensors good = parts_of(c);
  auto with = [&](const std::string& key, const std::string& value) {
    SafeTensors st = good;
    st.metadata[key] = value;
    return st;
  };
  auto without = [&](const std::string& key) {
    SafeTensors st = good;
    st.metadata.erase(key);
    return st;
  };
  for (const char* key : {"divcheck.format", "divergence", "params", "wants_grad"})
    expect_case_rejected(without(key), {std::string("metadata \"") + key + "\" is missing"});
  // Optional provenance fields.
  EXPECT_NO_THROW((void)decode_case(encode_safetensors(without("family")), "<ok>"));
  EXPECT_NO_THROW((void)decode_case(encode_safetensors(without("seed")), "<ok>"));
  EXPECT_NO_THROW((void)decode_case(encode_safetensors(without("note")), "<ok>"));
  EXPECT_NO_THROW((void)decode_case(encode_safetensors(without("divcheck.version")), "<ok>"));
  expect_case_rejected(with("divcheck.format", "2"), {"metadata \"divcheck.format\" = \"2\" is not supported"});
  expect_case_rejected(with("divergence", "kl"), {"metadata \"divergence\" = \"kl\" is not a known divergence"});
  expect_case_rejected(with("wants_grads", "[]"), {"metadata \"wants_grads\" = \"[]\" is not a case-file field"});
  for (const char* seed : {"", "-1", "+1", "01", "1.0", "0x10", "18446744073709551616", " 1", "1 "})
    expect_case_rejected(with("seed", seed), {"metadata \"seed\" = \"" + std::string(seed) + "\" must be a decimal"});
  EXPECT_EQ(decode_case(encode_safetensors(with("seed", "18446744073709551615")), "<ok>").provenance.seed,
            std::numeric_limits<std::uint64_t>::max());
}

TEST(MalformedCase, Params) {
  const Case c = sample_case(DivergenceId::fused_linear_masked_kl_divergence, 41);
  const SafeTensors good = parts_of(c);
  const auto params = nlohmann::json::parse(good.metadata.at("params"));
  auto with_params = [&](const std::string& text) {
    SafeTensors st = good;
    st.metadata["params"] = text;
    return st;
  };
  auto edited = [&](const std::string& field, const nlohmann::json& v) {
    auto p = params;
    p[field] = v;
    return with_params(p.dump());
  };
  expect_case_rejected(with_params("{"), {"metadata \"params\" is not valid JSON"});
  expect_case_rejected(with_params("[]"), {"metadata \"params\" must be a JSON object"});
  // A NUL (escaped in the header, raw inside the metadata string) must not hide trailing text.
  expect_case_rejected(with_params(params.dump() + std::string(1, '\0') + "}"),
                       {"metadata \"params\" is not valid JSON: raw NUL byte"});
  expect_case_rejected(with_params(R"({"temperature":1,"temperature":2})"), {"duplicate key \"temperature\""});
  {
    auto p = params;
    p.erase("chunk_size");
    expect_case_rejected(with_params(p.dump()), {"missing parameter \"chunk_size\""});
  }
  expect_case_rejected(edited("log_target", true),
                       {"log_target = true is not a parameter of fused_linear_masked_kl_divergence"});
  expect_case_rejected(edited("temperature", "1"), {"temperature = \"1\" must be a number"});
  expect_case_rejected(edited("temperature", nullptr), {"temperature = null must be a number"});
  expect_case_rejected(edited("chunk_size", 1.5), {"chunk_size = 1.5 must be an integer"});
  expect_case_rejected(edited("chunk_size", std::numeric_limits<std::uint64_t>::max()),
                       {"chunk_size = 18446744073709551615 must be an integer in the int64 range"});
  expect_case_rejected(edited("reduction", 1), {"reduction = 1 must be a string"});
  // Values of the right type but outside their domain: validate_case's message, as FormatError.
  expect_case_rejected(edited("temperature", -1.0), {"<case>: invalid case:", "temperature = -1: must be finite and > 0"});
  expect_case_rejected(edited("jsd_beta", 0.5), {"invalid case:", "jsd_beta = 0.5"});
  expect_case_rejected(edited("chunk_size", 0), {"invalid case:", "chunk_size = 0"});
  expect_case_rejected(edited("reduction", "avg"), {"invalid case:", "reduction = \"avg\""});
  // An integer where a double is expected is a number: accepted.
  EXPECT_EQ(decode_case(encode_safetensors(edited("temperature", 2)), "<ok>").params.temperature, 2.0);

  const Case ce = sample_case(DivergenceId::masked_cross_entropy, 42);
  SafeTensors st = parts_of(ce);
  st.metadata["params"] = R"({"max_loss":"x","scaling_factor":1})";
  expect_case_rejected(st, {"max_loss = \"x\" must be null or a number"});
  st.metadata["params"] = R"({"max_loss":0,"scaling_factor":1})";
  expect_case_rejected(st, {"invalid case:", "max_loss = 0"});
  const Case kl = sample_case(DivergenceId::masked_kl_divergence, 43);
  st = parts_of(kl);
  st.metadata["params"] = R"({"log_target":1})";
  expect_case_rejected(st, {"log_target = 1 must be true or false"});
  const Case dc = sample_case(DivergenceId::masked_unbiased_dcor, 44);
  st = parts_of(dc);
  st.metadata["params"] = R"({"safety_factor":-1})";
  expect_case_rejected(st, {"invalid case:", "safety_factor = -1"});
}

TEST(MalformedCase, WantsGrad) {
  const Case c = sample_case(DivergenceId::tvd_prob, 45);
  SafeTensors st = parts_of(c);
  st.metadata["wants_grad"] = "\"p\"";
  expect_case_rejected(st, {"metadata \"wants_grad\" must be a JSON list"});
  st.metadata["wants_grad"] = "[1]";
  expect_case_rejected(st, {"metadata \"wants_grad\"[0] = 1 must be a string"});
  st.metadata["wants_grad"] = "[\"q\"]";
  expect_case_rejected(st, {"invalid case:", "wants_grad = q"});
  st.metadata["wants_grad"] = "[\"p\",\"p\"]";
  expect_case_rejected(st, {"invalid case:", "listed twice"});
  st.metadata["wants_grad"] = "[]";
  EXPECT_TRUE(decode_case(encode_safetensors(st), "<ok>").wants_grad.empty());
}

TEST(MalformedCase, Tensors) {
  const Case c = sample_case(DivergenceId::jensen_shannon_divergence, 46);
  const SafeTensors good = parts_of(c);
  SafeTensors st = good;
  st.tensors.erase("grad_output");
  expect_case_rejected(st, {"tensor \"grad_output\" is missing"});
  st = good;
  st.tensors["grad_output"] = Tensor(DType::f32, {2});
  expect_case_rejected(st, {"invalid case:", "grad_output.shape = (2)"});
  st.metadata["wants_grad"] = "[]";  // grad_output is still checked: a case file always holds it right
  expect_case_rejected(st, {"tensor \"grad_output\": shape (2) must be the loss shape ()"});
  st = good;
  st.metadata["wants_grad"] = "[]";
  st.tensors["grad_output"] = Tensor(DType::f64, {});
  expect_case_rejected(st, {"tensor \"grad_output\": dtype F64 must be F32"});
  st = good;
  st.tensors.erase("clean_logits");
  expect_case_rejected(st, {"invalid case:", "clean_logits = None: is required"});
  st = good;
  st.tensors.emplace("extra", Tensor(DType::f32, {1}));
  expect_case_rejected(st, {"invalid case:", "extra = <tensor>"});
  st = good;
  st.tensors["attention_mask"] = Tensor(DType::f32, {2, 3});
  expect_case_rejected(st, {"invalid case:", "attention_mask.dtype = f32"});
  st = good;
  st.tensors["noisy_logits"] = Tensor(DType::f32, {2, 3, 6});
  expect_case_rejected(st, {"invalid case:", "clean_logits.shape = (2, 3, 5)"});
}

// ---------------------------------------------------------------------------------------------
// Result files

TEST(MalformedOutputs, Rejections) {
  SampleOptions o;
  o.random_params = false;
  const Case c = sample_case(DivergenceId::total_variation, 50, o);  // wants noisy/clean grads
  Outputs out;
  out.loss = Tensor(DType::f32, {});
  for (const auto& r : c.wants_grad) out.grads.emplace(r, Tensor(DType::f32, c.inputs.at(r).shape()));
  const SafeTensors good = decode_safetensors(encode_outputs(c, out), "<o>");
  auto rejected = [&](const SafeTensors& st, const std::vector<std::string>& needles) {
    const auto bytes = encode_safetensors(st);
    expect_format_error([&] { (void)decode_outputs(c, bytes, "<out>"); }, needles);
  };
  SafeTensors st = good;
  st.metadata.erase("divergence");
  rejected(st, {"metadata \"divergence\" is missing"});
  st.metadata["divergence"] = "tvd_prob";
  rejected(st, {"metadata \"divergence\" = \"tvd_prob\" but the case is total_variation"});
  st = good;
  st.metadata["divcheck.format"] = "9";
  rejected(st, {"divcheck.format\" = \"9\" is not supported"});
  st = good;
  st.metadata["producer"] = "torch";  // outside annotations are allowed
  EXPECT_NO_THROW((void)decode_outputs(c, encode_safetensors(st), "<ok>"));
  st = good;
  st.tensors.erase("loss");
  rejected(st, {"tensor \"loss\" is missing"});
  st = good;
  st.tensors["loss"] = Tensor(DType::f64, {});
  rejected(st, {"loss.dtype = f64: must be f32"});
  st = good;
  st.tensors["loss"] = Tensor(DType::f32, {2});
  rejected(st, {"loss.shape = (2): must be the loss shape ()"});
  st = good;
  st.tensors.erase("grad.clean_logits");
  rejected(st, {"grad.clean_logits = None: the case requests this gradient"});
  st = good;
  st.tensors["grad.clean_logits"] = Tensor(DType::bf16, {2, 3, 5});
  rejected(st, {"grad.clean_logits.dtype = bf16: must be the dtype of clean_logits, f32"});
  st = good;
  st.tensors["grad.clean_logits"] = Tensor(DType::f32, {2, 3, 4});
  rejected(st, {"grad.clean_logits.shape = (2, 3, 4): must be the shape of clean_logits, (2, 3, 5)"});
  st = good;
  st.tensors.emplace("grad.attention_mask", Tensor(DType::f32, {2, 3}));
  rejected(st, {"tensor \"grad.attention_mask\": the case does not request the gradient of \"attention_mask\""});
  st = good;
  st.tensors.emplace("logits", Tensor(DType::f32, {1}));
  rejected(st, {"tensor \"logits\" is neither \"loss\" nor \"grad.<role>\""});
  // A case file is not a result file.
  expect_format_error([&] { (void)decode_outputs(c, encode_case(c), "<out>"); }, {"is neither \"loss\""});
}

}  // namespace
}  // namespace divcheck

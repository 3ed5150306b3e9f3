// Case files that must be accepted: bitwise round trips of cases of every registry row and every
// dtype (tensors, parameters, wanted gradients, provenance), of result files, of the generic
// container; the layout the encoder writes (sorted, contiguous, header padded to 8); a
// hand-assembled safetensors file as another writer would produce it; files on disk.
#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "core/case_file.hpp"
#include "core/version.hpp"
#include "tests/core/case_file_helpers.hpp"
#include "tests/core/sample_cases.hpp"

namespace divcheck {
namespace {

using namespace divcheck::testing;

std::string header_text(const std::vector<std::byte>& file) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | std::to_integer<std::uint64_t>(file[static_cast<std::size_t>(i)]);
  return std::string(reinterpret_cast<const char*>(file.data() + 8), n);
}

TEST(CaseFile, RoundTripEveryRowEveryDTypeBitwise) {
  int n = 0;
  for (const auto& d : registry()) {
    for (DType fdt : kFloatDTypes) {
      for (std::size_t m = 0; m < std::size(kMaskDTypes); ++m) {
        SampleOptions o;
        o.float_dtype = fdt;
        o.mask_dtype = kMaskDTypes[m];
        o.label_dtype = kLabelDTypes[m % std::size(kLabelDTypes)];
        o.random_params = m != 0;
        o.with_optional = m != 5;
        o.all_grads = m != 4;
        const std::uint64_t seed = 0xfedcba9876543210ull + 17 * n;
        const Case c = sample_case(d.id, seed, o);
        SCOPED_TRACE(std::string(d.name) + " " + std::string(short_name(fdt)) + " mask " +
                     std::string(short_name(o.mask_dtype)));
        const auto bytes = encode_case(c);
        const Case back = decode_case(bytes, "<roundtrip>");
        expect_same_case(c, back);
        EXPECT_EQ(encode_case(back), bytes) << "encoding is not deterministic";
        ++n;
      }
    }
  }
  EXPECT_EQ(n, 12 * 3 * 6);
}

// Doubles with every bit pattern of the mantissa survive the JSON text of "params".
TEST(CaseFile, ParameterDoublesRoundTripBitwise) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 3000; ++i) {
    Case c = sample_case(DivergenceId::fused_linear_masked_kl_divergence, 1);
    // Random positive finite doubles over the whole exponent range, including subnormals.
    auto draw = [&] {
      for (;;) {
        double x = std::bit_cast<double>(rng() & 0x7fffffffffffffffull);
        if (std::isfinite(x) && x > 0) return x;
      }
    };
    c.params.temperature = draw();
    c.params.chunk_size = static_cast<std::int64_t>(rng() >> 1);
    Case ce = sample_case(DivergenceId::masked_cross_entropy, 2);
    ce.params.max_loss = draw();
    ce.params.scaling_factor = draw();
    Case dc = sample_case(DivergenceId::masked_unbiased_dcor, 3);
    dc.params.safety_factor = i == 0 ? std::numeric_limits<double>::denorm_min() : draw();
    for (const Case* x : {&c, &ce, &dc}) {
      const Case back = decode_case(encode_case(*x), "<params>");
      expect_same_case(*x, back);
      if (HasFailure()) return;
    }
  }
}

TEST(CaseFile, ProvenanceSurvivesExtremes) {
  Case c = sample_case(DivergenceId::total_variation, 5);
  c.provenance.seed = std::numeric_limits<std::uint64_t>::max();
  c.provenance.family = "";
  c.provenance.note = std::string("quote \" backslash \\ newline \n nul \0 tab \t end", 44);
  expect_same_case(c, decode_case(encode_case(c), "<x>"));
  c.provenance.seed = 0;
  expect_same_case(c, decode_case(encode_case(c), "<x>"));
}

// A case whose grad_output was never set is written with zeros of the loss shape (the file
// always holds grad_output); it is only allowed when no gradient is wanted.
TEST(CaseFile, UnsetGradOutputIsWrittenAsZeros) {
  Case c = sample_case(DivergenceId::jefferys_divergence, 6);
  c.params.reduction = "none";
  c.wants_grad.clear();
  c.grad_output = Tensor();
  const Case back = decode_case(encode_case(c), "<x>");
  EXPECT_TRUE(back.grad_output.bitwise_equal(Tensor(DType::f32, {2})));
  // A grad_output that is set but wrong is refused even without wanted gradients.
  c.grad_output = Tensor(DType::f32, {3});
  try {
    (void)encode_case(c);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("grad_output.shape = (3)"), std::string::npos) << e.what();
  }
}

TEST(CaseFile, EncodeRejectsInvalidCase) {
  Case c = sample_case(DivergenceId::temperature_scaled_masked_kl_divergence, 7);
  c.params.temperature = std::nan("");
  EXPECT_THROW((void)encode_case(c), InvalidArgument);
  Case bad_utf8 = sample_case(DivergenceId::total_variation, 7);
  bad_utf8.provenance.note = "\xff\xfe";
  try {
    (void)encode_case(bad_utf8);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("note"), std::string::npos) << e.what();
  }
}

// The layout: "__metadata__" first, tensors in sorted-name order, contiguous from 0, the header
// padded with spaces to a multiple of 8, and the metadata fields a case file carries.
TEST(CaseFile, EncodedLayout) {
  SampleOptions o;
  o.random_params = true;
  const Case c = sample_case(DivergenceId::masked_cross_entropy, 8, o);
  const auto bytes = encode_case(c);
  const std::string h = header_text(bytes);
  EXPECT_EQ(h.size() % 8, 0u);
  EXPECT_EQ(h.find_last_not_of(' ') + 1, h.find_last_of('}') + 1);  // only spaces after the JSON
  const auto j = nlohmann::ordered_json::parse(h);
  auto it = j.begin();
  EXPECT_EQ(it.key(), "__metadata__");
  std::uint64_t cursor = 0;
  std::string previous;
  for (++it; it != j.end(); ++it) {
    EXPECT_LT(previous, it.key());
    previous = it.key();
    EXPECT_EQ(it.value()["data_offsets"][0].get<std::uint64_t>(), cursor);
    cursor = it.value()["data_offsets"][1].get<std::uint64_t>();
  }
  EXPECT_EQ(8 + h.size() + cursor, bytes.size());
  const auto& meta = j["__metadata__"];
  EXPECT_EQ(meta["divcheck.format"], std::to_string(kCaseFileFormatVersion));
  EXPECT_EQ(meta["divcheck.version"], kVersion);
  EXPECT_EQ(meta["divergence"], "masked_cross_entropy");
  EXPECT_EQ(meta["seed"], "8");
  EXPECT_EQ(meta["family"], "sample");
  const auto params = nlohmann::json::parse(meta["params"].get<std::string>());
  EXPECT_EQ(params.size(), 2u);  // exactly the row's parameters: max_loss and scaling_factor
  EXPECT_TRUE(params.contains("max_loss"));
  EXPECT_TRUE(params.contains("scaling_factor"));
  EXPECT_EQ(nlohmann::json::parse(meta["wants_grad"].get<std::string>()),
            nlohmann::json({"input_logits", "target_logits"}));
  EXPECT_TRUE(j.contains("grad_output"));
}

// A file assembled by hand exactly as the safetensors format describes it (what the Python or
// Rust writer would produce for {"a": float32 [1.5, -2], "b": int64 [[7]]} with metadata):
// 1.5f = 0x3fc00000, -2.0f = 0xc0000000 (little-endian bytes below).
TEST(SafeTensors, DecodesHandAssembledFile) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I64","shape":[1,1],"data_offsets":[8,16]}})";
  std::vector<std::byte> data = {std::byte{0x00}, std::byte{0x00}, std::byte{0xc0}, std::byte{0x3f},
                                 std::byte{0x00}, std::byte{0x00}, std::byte{0x00}, std::byte{0xc0},
                                 std::byte{7},    std::byte{0},    std::byte{0},    std::byte{0},
                                 std::byte{0},    std::byte{0},    std::byte{0},    std::byte{0}};
  const SafeTensors st = decode_safetensors(file_with(header, data), "<hand>");
  EXPECT_EQ(st.metadata.at("format"), "pt");
  ASSERT_EQ(st.tensors.size(), 2u);
  const Tensor& a = st.tensors.at("a");
  EXPECT_EQ(a.dtype(), DType::f32);
  EXPECT_EQ(a.shape(), (Shape{2}));
  EXPECT_EQ(a.get(0), 1.5);
  EXPECT_EQ(a.get(1), -2.0);
  const Tensor& b = st.tensors.at("b");
  EXPECT_EQ(b.dtype(), DType::i64);
  EXPECT_EQ(b.shape(), (Shape{1, 1}));
  EXPECT_EQ(b.get(0), 7.0);
  // Whitespace in the header (pretty-printed JSON, trailing spaces) is accepted; tensors may be
  // listed in any order and stored in any order as long as they tile the data section.
  const std::string pretty =
      "{\n  \"b\": {\"data_offsets\": [0, 8], \"shape\": [1, 1], \"dtype\": \"I64\"},\n"
      "  \"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 16]}\n}   ";
  std::vector<std::byte> swapped(data.begin() + 8, data.end());
  swapped.insert(swapped.end(), data.begin(), data.begin() + 8);
  const SafeTensors st2 = decode_safetensors(file_with(pretty, swapped), "<pretty>");
  EXPECT_TRUE(st2.tensors.at("a").bitwise_equal(a));
  EXPECT_TRUE(st2.tensors.at("b").bitwise_equal(b));
  EXPECT_TRUE(st2.metadata.empty());
}

TEST(SafeTensors, RoundTripEveryDTypeAndEdgeShapes) {
  SafeTensors st;
  std::mt19937_64 rng(3);
  const DType all[] = {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i64,
                       DType::i32, DType::i16,  DType::i8,  DType::u8,  DType::boolean};
  for (DType dt : all) {
    Tensor t(dt, {3, 2});
    for (std::size_t i = 0; i < t.nbytes(); ++i) t.data()[i] = static_cast<std::byte>(rng());
    if (dt == DType::boolean)
      for (std::size_t i = 0; i < t.nbytes(); ++i) t.data()[i] = static_cast<std::byte>(rng() % 2);
    st.tensors.emplace(std::string(short_name(dt)), t);
  }
  st.tensors.emplace("scalar", Tensor::scalar_f32(-0.0f));
  st.tensors.emplace("empty", Tensor(DType::f32, {0, 5}));
  st.tensors.emplace("empty2", Tensor(DType::i8, {4, 0}));
  st.tensors.emplace("unicode \xc3\xa9", Tensor(DType::u8, {1}));
  st.metadata["k"] = "v";
  st.metadata[""] = "";
  const auto bytes = encode_safetensors(st);
  const SafeTensors back = decode_safetensors(bytes, "<all>");
  EXPECT_EQ(back.metadata, st.metadata);
  ASSERT_EQ(back.tensors.size(), st.tensors.size());
  for (const auto& [name, t] : st.tensors) EXPECT_TRUE(back.tensors.at(name).bitwise_equal(t)) << name;
  EXPECT_EQ(encode_safetensors(back), bytes);
  // Nothing at all: "{}" padded, no data.
  const auto none = encode_safetensors({});
  EXPECT_EQ(none.size(), 16u);
  EXPECT_TRUE(decode_safetensors(none, "<none>").tensors.empty());
}

TEST(SafeTensors, EncodeRefusesWhatCannotBeWritten) {
  SafeTensors st;
  st.tensors.emplace("__metadata__", Tensor(DType::f32, {1}));
  EXPECT_THROW((void)encode_safetensors(st), InvalidArgument);
  SafeTensors st2;
  st2.tensors.emplace("unset", Tensor());
  EXPECT_THROW((void)encode_safetensors(st2), InvalidArgument);
  SafeTensors st3;
  st3.tensors.emplace("bad\xc0\xaf", Tensor(DType::f32, {1}));  // overlong UTF-8
  EXPECT_THROW((void)encode_safetensors(st3), InvalidArgument);
}

Outputs sample_outputs(const Case& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Outputs o;
  o.loss = Tensor(DType::f32, loss_shape(c));
  for (std::int64_t i = 0; i < o.loss.numel(); ++i) o.loss.set(i, static_cast<double>(rng() % 1000) / 7.0);
  for (const auto& role : c.wants_grad) {
    const Tensor& in = c.inputs.at(role);
    Tensor g(in.dtype(), in.shape());
    for (std::size_t i = 0; i < g.nbytes(); ++i) g.data()[i] = static_cast<std::byte>(rng());
    o.grads.emplace(role, g);
  }
  return o;
}

TEST(Outputs, RoundTripEveryRowBitwise) {
  for (const auto& d : registry()) {
    for (DType fdt : kFloatDTypes) {
      SampleOptions opt;
      opt.float_dtype = fdt;
      opt.random_params = true;
      const Case c = sample_case(d.id, 21, opt);
      const Outputs o = sample_outputs(c, 5);
      const auto bytes = encode_outputs(c, o);
      const Outputs back = decode_outputs(c, bytes, "<out>");
      EXPECT_TRUE(back.loss.bitwise_equal(o.loss)) << d.name;
      ASSERT_EQ(back.grads.size(), o.grads.size());
      for (const auto& [role, g] : o.grads) EXPECT_TRUE(back.grads.at(role).bitwise_equal(g)) << d.name << role;
      // The file names the tensors "loss" and "grad.<role>".
      const auto st = decode_safetensors(bytes, "<out>");
      EXPECT_EQ(st.metadata.at("divergence"), d.name);
      for (const auto& role : c.wants_grad) EXPECT_TRUE(st.tensors.count("grad." + role)) << role;
    }
  }
}

TEST(Outputs, EncodeRejectsMismatchedOutputs) {
  const Case c = sample_case(DivergenceId::masked_kl_divergence, 22);
  Outputs o = sample_outputs(c, 1);
  o.grads.erase("target_logits");
  EXPECT_THROW((void)encode_outputs(c, o), InvalidArgument);
  o = sample_outputs(c, 1);
  o.loss = Tensor(DType::f32, {2});
  try {
    (void)encode_outputs(c, o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("loss.shape = (2)"), std::string::npos) << e.what();
  }
  o = sample_outputs(c, 1);
  o.loss = Tensor();
  EXPECT_THROW((void)encode_outputs(c, o), InvalidArgument);
}

TEST(Files, WriteReadCaseAndOutputs) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "divcheck_io_test_" + std::to_string(::getpid()) + ".safetensors";
  SampleOptions opt;
  opt.float_dtype = DType::bf16;
  const Case c = sample_case(DivergenceId::tvd_prob, 23, opt);
  write_case(path, c);
  expect_same_case(c, read_case(path));
  const Outputs o = sample_outputs(c, 2);
  write_outputs(path, c, o);  // overwrites
  EXPECT_TRUE(read_outputs(path, c).loss.bitwise_equal(o.loss));
  EXPECT_EQ(read_file_bytes(path), encode_outputs(c, o));
  ::unlink(path.c_str());
}

TEST(Files, ReadErrorsNameThePathAndTheReason) {
  const std::string missing = ::testing::TempDir() + "divcheck_no_such_file_" + std::to_string(::getpid());
  expect_format_error([&] { (void)read_file_bytes(missing); }, {missing, "No such file or directory"});
  expect_format_error([&] { (void)read_case(missing); }, {missing});
  expect_format_error([&] { (void)read_file_bytes(::testing::TempDir()); }, {"directory"});
  expect_format_error([&] { write_file_bytes(missing + "/sub/x", {}); }, {missing, "No such file or directory"});
  EXPECT_TRUE(read_file_bytes("/dev/null").empty());  // not a regular file: read as a stream
  EXPECT_FALSE(read_file_bytes("/proc/self/status").empty());  // regular, but st_size is 0
  expect_format_error([&] { (void)read_case("/dev/null"); }, {"/dev/null", "shorter than the 8-byte"});
}

// A file beyond kMaxCaseFileBytes is refused from its size alone, before anything is read (the
// file is sparse: it occupies no disk space).
TEST(Files, RefusesFilesBeyondTheSizeLimit) {
  const std::string path = ::testing::TempDir() + "divcheck_io_huge_" + std::to_string(::getpid());
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(::ftruncate(::fileno(f), static_cast<off_t>(kMaxCaseFileBytes + 1)), 0) << std::strerror(errno);
    std::fclose(f);
  }
  expect_format_error([&] { (void)read_file_bytes(path); }, {path, "68719476737 bytes, larger than the limit"});
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace divcheck

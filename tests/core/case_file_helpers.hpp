// Helpers of the case-file tests: hand-made safetensors files, bitwise case comparison, and
// checks that a decode is rejected with a FormatError that names what is wrong.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/case_file.hpp"
#include "core/errors.hpp"

namespace divcheck::testing {

inline std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> b;
  for (char c : s) b.push_back(static_cast<std::byte>(c));
  return b;
}

// A safetensors file from header text and data bytes. The length field is the header's size
// unless `length` overrides it (a lying header).
inline std::vector<std::byte> file_with(std::string_view header, const std::vector<std::byte>& data = {},
                                        std::optional<std::uint64_t> length = std::nullopt) {
  std::vector<std::byte> out;
  const std::uint64_t n = length.value_or(header.size());
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((n >> (8 * i)) & 0xff));
  auto h = bytes_of(header);
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// `decode` must throw FormatError whose message contains every one of `needles`.
inline void expect_format_error(const std::function<void()>& decode, const std::vector<std::string>& needles) {
  try {
    decode();
    ADD_FAILURE() << "accepted; expected a FormatError mentioning " << (needles.empty() ? "" : needles.front());
  } catch (const FormatError& e) {
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "message lacks \"" << n << "\": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

inline void expect_bitwise_double(double a, double b, const char* what) {
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a), std::bit_cast<std::uint64_t>(b)) << what << ": " << a << " vs " << b;
}

// Bitwise equality of two cases: id, every parameter (doubles by bits), tensors, grad_output,
// wanted gradients (in order) and provenance.
inline void expect_same_case(const Case& a, const Case& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.params.log_target, b.params.log_target);
  ASSERT_EQ(a.params.max_loss.has_value(), b.params.max_loss.has_value());
  if (a.params.max_loss) expect_bitwise_double(*a.params.max_loss, *b.params.max_loss, "max_loss");
  expect_bitwise_double(a.params.scaling_factor, b.params.scaling_factor, "scaling_factor");
  expect_bitwise_double(a.params.temperature, b.params.temperature, "temperature");
  expect_bitwise_double(a.params.jsd_beta, b.params.jsd_beta, "jsd_beta");
  expect_bitwise_double(a.params.safety_factor, b.params.safety_factor, "safety_factor");
  EXPECT_EQ(a.params.reduction, b.params.reduction);
  EXPECT_EQ(a.params.chunk_size, b.params.chunk_size);
  EXPECT_EQ(a.params.ignore_index, b.params.ignore_index);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (const auto& [name, t] : a.inputs) {
    auto it = b.inputs.find(name);
    ASSERT_NE(it, b.inputs.end()) << name;
    EXPECT_TRUE(t.bitwise_equal(it->second)) << name;
  }
  EXPECT_TRUE(a.grad_output.bitwise_equal(b.grad_output));
  EXPECT_EQ(a.wants_grad, b.wants_grad);
  EXPECT_EQ(a.provenance.family, b.provenance.family);
  EXPECT_EQ(a.provenance.seed, b.provenance.seed);
  EXPECT_EQ(a.provenance.note, b.provenance.note);
}

}  // namespace divcheck::testing

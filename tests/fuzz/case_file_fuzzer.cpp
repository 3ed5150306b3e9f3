// libFuzzer target: the case-file reader (core/case_file.cpp decode_case) on arbitrary bytes.
// The contract, as in tests/core/case_file_fuzz_test.cpp (the RapidCheck fuzz CI runs): a file
// is either accepted -- and then re-encodes to bytes that decode to a case that encodes to the
// same bytes again -- or refused with FormatError / InvalidArgument. Any other exception, a
// crash, or an AddressSanitizer / UndefinedBehaviorSanitizer report is a finding. Built and run
// by scripts/fuzz (coverage-guided, clang); not part of the default build.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/case_file.hpp"
#include "core/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* first = reinterpret_cast<const std::byte*>(data);
  const std::vector<std::byte> bytes(first, first + size);
  try {
    const divcheck::Case c = divcheck::decode_case(bytes, "fuzz input");
    const std::vector<std::byte> again = divcheck::encode_case(c);
    const divcheck::Case back = divcheck::decode_case(again, "re-encoded fuzz input");
    if (divcheck::encode_case(back) != again) __builtin_trap();  // the round trip is not stable
  } catch (const divcheck::FormatError&) {
  } catch (const divcheck::InvalidArgument&) {
  }
  return 0;
}

// libFuzzer target: the results-file reader of `divcheck verify-results` (core/case_file.cpp
// decode_outputs), the other file divcheck takes from outside. A results file is judged against
// a case, so the target loads the case files of a folder (DIVCHECK_FUZZ_CASES, required) once;
// the first input byte picks one of them and the rest is the results file. Accepted outputs
// must re-encode (encode_outputs) to a file that decodes again; everything else must be refused
// with FormatError. Any other exception, a crash, or a sanitizer report is a finding.
//
// DIVCHECK_FUZZ_SEEDS_OUT=DIR writes a seed corpus instead (one valid results file per case:
// zero loss and gradients of the case's shapes and dtypes) and exits. Built and run by
// scripts/fuzz; not part of the default build.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/case.hpp"
#include "core/case_file.hpp"
#include "core/errors.hpp"

namespace {

std::vector<divcheck::Case>& cases() {
  static std::vector<divcheck::Case> loaded;
  return loaded;
}

// Valid outputs of a case: a zero loss of its loss shape and a zero gradient per wanted role.
divcheck::Outputs zero_outputs(const divcheck::Case& c) {
  divcheck::Outputs o;
  o.loss = divcheck::Tensor(divcheck::DType::f32, divcheck::loss_shape(c));
  for (const auto& role : c.wants_grad) {
    const divcheck::Tensor* t = c.input(role);
    o.grads.emplace(role, divcheck::Tensor(t->dtype(), t->shape()));
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("DIVCHECK_FUZZ_CASES");
  if (dir == nullptr) {
    std::fprintf(stderr, "outputs_fuzzer: set DIVCHECK_FUZZ_CASES to a folder of case files\n");
    std::exit(2);
  }
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());  // the same case for the same first byte on every run
  for (const auto& p : paths) cases().push_back(divcheck::read_case(p.string()));
  if (cases().empty() || cases().size() > 256) {
    std::fprintf(stderr, "outputs_fuzzer: %s holds %zu case files (1 to 256 wanted)\n", dir, cases().size());
    std::exit(2);
  }
  if (const char* out = std::getenv("DIVCHECK_FUZZ_SEEDS_OUT")) {
    for (std::size_t k = 0; k < cases().size(); ++k) {
      std::vector<std::byte> bytes{static_cast<std::byte>(k)};
      const std::vector<std::byte> file = divcheck::encode_outputs(cases()[k], zero_outputs(cases()[k]));
      bytes.insert(bytes.end(), file.begin(), file.end());
      divcheck::write_file_bytes((std::filesystem::path(out) / ("seed-" + std::to_string(k))).string(), bytes);
    }
    std::fprintf(stderr, "outputs_fuzzer: wrote %zu seeds to %s\n", cases().size(), out);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const divcheck::Case& c = cases()[data[0] % cases().size()];
  const auto* first = reinterpret_cast<const std::byte*>(data) + 1;
  const std::vector<std::byte> bytes(first, first + (size - 1));
  try {
    const divcheck::Outputs o = divcheck::decode_outputs(c, bytes, "fuzz input");
    const std::vector<std::byte> again = divcheck::encode_outputs(c, o);
    (void)divcheck::decode_outputs(c, again, "re-encoded fuzz input");
  } catch (const divcheck::FormatError&) {
  }
  return 0;
}

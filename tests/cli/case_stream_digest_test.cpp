// The gate's case stream is part of the report schema (docs/report-schema.md, "The case
// stream"): a nightly's failure is regenerated from (seed, divergence, k) alone, so a change to
// a generator that makes (seed, divergence, k) name another case must bump kReportSchemaVersion.
// This test pins a digest of the first cases of every row's stream at the default seed, recorded
// for the schema version in force. When it fails, the stream changed: bump kReportSchemaVersion
// (core/version.hpp), add a line to docs/report-schema.md's Versions paragraph, and record the
// digest the failure prints under the new version below. Recorded on the project's build image
// (Debian, GCC 12: the generators use the standard library's distributions, so another
// standard library may draw other cases, for this test and for the gate alike).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "cli/case_stream.hpp"
#include "core/case_file.hpp"
#include "core/dtype.hpp"
#include "core/registry.hpp"
#include "core/version.hpp"
#include "properties/generators.hpp"

namespace divcheck::gate {
namespace {

constexpr std::int64_t kCasesPerRow = 4;  // cases 0..3: four families, sizes 0, 7, 14, 21

// The digests recorded per schema version (only the version in force is checked).
const std::map<int, std::uint64_t> kRecordedDigests = {
    {2, 0x4e8f3e38f2c881e4ull},
};

void mix(std::uint64_t& h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001B3ull;  // FNV-1a 64
  }
}
void mix(std::uint64_t& h, const std::string& s) {
  const std::uint64_t n = s.size();
  mix(h, &n, sizeof n);
  mix(h, s.data(), s.size());
}

// FNV-1a over each case as its case file carries it (metadata except the tool version, then
// every tensor's name, dtype, shape and bytes), for cases 0..kCasesPerRow-1 of every row.
std::uint64_t stream_digest(std::uint64_t run_seed) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const DivergenceInfo& d : registry()) {
    const auto& fams = families(d.id);
    for (std::int64_t k = 0; k < kCasesPerRow; ++k) {
      const std::string family(fams[family_index(k, fams.size())].name);
      const Case c = draw_case(d.id, family, case_seed(run_seed, d.name, k), case_size(k)).value();
      const SafeTensors st = decode_safetensors(encode_case(c), "<digest>");
      for (const auto& [key, value] : st.metadata) {
        if (key == "divcheck.version") continue;  // the tool version is not part of the stream
        mix(h, key);
        mix(h, value);
      }
      for (const auto& [name, t] : st.tensors) {
        mix(h, name);
        mix(h, std::string(short_name(t.dtype())));
        for (std::int64_t dim : t.shape()) mix(h, &dim, sizeof dim);
        mix(h, t.data(), t.nbytes());
      }
    }
  }
  return h;
}

TEST(CaseStream, DigestOfTheStreamMatchesTheSchemaVersion) {
  const std::uint64_t digest = stream_digest(kDefaultSeed);
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(digest));
  std::cout << "[ digest ] case stream of schema version " << kReportSchemaVersion << ": " << hex << "\n";
  const auto it = kRecordedDigests.find(kReportSchemaVersion);
  ASSERT_NE(it, kRecordedDigests.end()) << "no digest recorded for schema version " << kReportSchemaVersion
                                        << "; record " << hex;
  EXPECT_EQ(digest, it->second) << "the gate's case stream changed (digest " << hex
                                << "): bump kReportSchemaVersion, document it in docs/report-schema.md, and "
                                   "record the new digest in this test";
  // The digest depends on the stream: another run seed names other cases.
  EXPECT_NE(stream_digest(kDefaultSeed + 1), digest);
}

}  // namespace
}  // namespace divcheck::gate

// Unit tests of the CLI's option parser, value converters and the case-stream functions.
#include <gtest/gtest.h>

#include <set>

#include "cli/arg_parse.hpp"
#include "cli/case_stream.hpp"
#include "core/errors.hpp"

namespace divcheck::cli {
namespace {

// The message of the InvalidArgument `fn` throws ("" when it throws nothing).
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

const std::vector<OptionSpec> kSpecs = {{"--cases"}, {"--divergence", true, true}, {"--verbose", false}};

TEST(ArgParse, ValuesFlagsPositionalsAndEqualsForm) {
  const ParsedArgs a =
      parse_args("t", {"file", "--cases", "3", "--divergence=a,b", "--divergence", "c", "--verbose"}, kSpecs);
  EXPECT_EQ(a.positionals, (std::vector<std::string>{"file"}));
  EXPECT_EQ(a.value("--cases"), "3");
  EXPECT_EQ(a.values("--divergence"), (std::vector<std::string>{"a,b", "c"}));
  EXPECT_TRUE(a.has("--verbose"));
  EXPECT_FALSE(a.has("--absent"));
  EXPECT_EQ(split_list("--divergence", a.values("--divergence")), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(ArgParse, DoubleDashEndsOptions) {
  const ParsedArgs a = parse_args("t", {"--", "--cases"}, kSpecs);
  EXPECT_EQ(a.positionals, (std::vector<std::string>{"--cases"}));
}

TEST(ArgParse, RejectionsNameTheOption) {
  EXPECT_NE(error_of([] { parse_args("t", {"--bogus"}, kSpecs); }).find("--bogus"), std::string::npos);
  EXPECT_NE(error_of([] { parse_args("t", {"--cases"}, kSpecs); }).find("--cases"), std::string::npos);
  EXPECT_NE(error_of([] { parse_args("t", {"--cases", "--verbose"}, kSpecs); }).find("needs a value"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_args("t", {"--cases", "1", "--cases", "2"}, kSpecs); }).find("more than once"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_args("t", {"--verbose=yes"}, kSpecs); }).find("--verbose"), std::string::npos);
  EXPECT_NE(error_of([] { split_list("--divergence", {"a,,b"}); }).find("empty item"), std::string::npos);
}

TEST(ArgParse, RepeatedOptionNamesBothValues) {
  // The value given second is the one shown, the first is named in the reason, in either spelling.
  const std::string e = error_of([] { parse_args("t", {"--cases", "3", "--cases=4"}, kSpecs); });
  EXPECT_NE(e.find("--cases = 4"), std::string::npos) << e;
  EXPECT_NE(e.find("given more than once (first as '3')"), std::string::npos) << e;
  const std::string f = error_of([] { parse_args("t", {"--verbose", "--verbose"}, kSpecs); });
  EXPECT_NE(f.find("--verbose = (flag)"), std::string::npos) << f;
  EXPECT_NE(f.find("given more than once"), std::string::npos) << f;
}

TEST(ArgParse, StrictIntegers) {
  EXPECT_EQ(parse_int("--cases", "200", 1, 1000), 200);
  for (const char* bad : {"", "abc", "12x", " 1", "+1", "-3", "0", "1001", "1e3", "99999999999999999999"})
    EXPECT_NE(error_of([&] { parse_int("--cases", bad, 1, 1000); }).find("--cases"), std::string::npos) << bad;
}

TEST(ArgParse, U64Seeds) {
  EXPECT_EQ(parse_u64("--seed", "18446744073709551615"), 18446744073709551615ull);
  for (const char* bad : {"", "-1", "18446744073709551616", "0x10", "1.5"})
    EXPECT_NE(error_of([&] { parse_u64("--seed", bad); }).find("--seed"), std::string::npos) << bad;
}

TEST(ArgParse, Seconds) {
  EXPECT_EQ(parse_positive_seconds("--time-budget", "1.5"), 1.5);
  for (const char* bad : {"", "-1", "0", "inf", "nan", "1s", "abc"})
    EXPECT_NE(error_of([&] { parse_positive_seconds("--time-budget", bad); }).find("--time-budget"),
              std::string::npos)
        << bad;
}

TEST(ArgParse, Shards) {
  EXPECT_EQ(parse_shard("--shard", "0/1"), std::make_pair(0, 1));
  EXPECT_EQ(parse_shard("--shard", "3/4"), std::make_pair(3, 4));
  for (const char* bad : {"", "1", "3/2", "2/2", "0/0", "-1/2", "a/b", "1/2/3", "/2"})
    EXPECT_NE(error_of([&] { parse_shard("--shard", bad); }).find("--shard"), std::string::npos) << bad;
}

}  // namespace
}  // namespace divcheck::cli

namespace divcheck::gate {
namespace {

TEST(CaseStream, SizesCoverZeroToHundred) {
  std::set<int> sizes;
  for (std::int64_t k = 0; k < 101; ++k) sizes.insert(case_size(k));
  EXPECT_EQ(sizes.size(), 101u);  // 7 is invertible mod 101: k -> 7k mod 101 is a bijection
  EXPECT_EQ(*sizes.begin(), 0);
  EXPECT_EQ(*sizes.rbegin(), 100);
  EXPECT_EQ(case_size(1), 7);
  EXPECT_EQ(case_size(15), 4);  // 105 mod 101
}

TEST(CaseStream, SeedsDependOnRunSeedDivergenceAndIndex) {
  std::set<std::uint64_t> seeds;
  for (std::uint64_t s : {1ull, 2ull})
    for (const char* d : {"tvd_prob", "total_variation"})
      for (std::int64_t k = 0; k < 50; ++k) seeds.insert(case_seed(s, d, k));
  EXPECT_EQ(seeds.size(), 200u);
  EXPECT_EQ(case_seed(kDefaultSeed, "tvd_prob", 7), case_seed(kDefaultSeed, "tvd_prob", 7));
}

TEST(CaseStream, KnownValuesOfTheMixers) {
  // splitmix64 of 0 is the first output of the reference splitmix64 generator seeded with 0
  // (Vigna's splitmix64.c): 0xE220A8397B1DCDAF. FNV-1a of "" is the offset basis and of "a"
  // is 0xAF63DC4C8601EC8C (the published FNV test vectors).
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(fnv1a64(""), 0xCBF29CE484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xAF63DC4C8601EC8Cull);
}

TEST(CaseStream, ShardsPartitionTheStream) {
  for (int n = 1; n <= 5; ++n)
    for (std::int64_t k = 0; k < 40; ++k) {
      int owners = 0;
      for (int i = 0; i < n; ++i) owners += on_shard(k, i, n) ? 1 : 0;
      EXPECT_EQ(owners, 1) << "k=" << k << " n=" << n;
    }
}

}  // namespace
}  // namespace divcheck::gate

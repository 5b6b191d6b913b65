// Size-list parser: every accepted form, and bad lists rejected with a message naming the bad token.
#include <gtest/gtest.h>

#include "base/error.h"
#include "app/sizes.h"

using namespace parbench;
using V = std::vector<std::uint64_t>;

TEST(Sizes, SingleSizes) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("8"), 8u);
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(parse_size("3k"), 3072u);
  EXPECT_EQ(parse_size("64M"), 64ull << 20);
  EXPECT_EQ(parse_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_size("2GB"), 2ull << 30);
  EXPECT_EQ(format_size(1024), "1K");
  EXPECT_EQ(format_size(1536), "1536");
  EXPECT_EQ(format_size(64ull << 20), "64M");
  EXPECT_EQ(format_size(8ull << 30), "8G");
}

TEST(Sizes, MultiplicativeRange) {
  EXPECT_EQ(parse_size_list("8:64:x2"), (V{8, 16, 32, 64}));
  EXPECT_EQ(parse_size_list("8:100:x4"), (V{8, 32}));  // max not on the grid: stop below it
  auto v = parse_size_list("8:1G:x2");
  EXPECT_EQ(v.size(), 28u);
  EXPECT_EQ(v.front(), 8u);
  EXPECT_EQ(v.back(), 1ull << 30);
  EXPECT_EQ(parse_size_list("1K:1K:x2"), (V{1024}));
}

TEST(Sizes, AdditiveRangeAndList) {
  EXPECT_EQ(parse_size_list("1K:4K:+1K"), (V{1024, 2048, 3072, 4096}));
  auto v = parse_size_list("1K:64M:+1M");
  EXPECT_EQ(v.size(), 64u);
  EXPECT_EQ(v[1], 1024u + (1u << 20));
  EXPECT_EQ(parse_size_list("1K,4K,1M"), (V{1024, 4096, 1u << 20}));
  EXPECT_EQ(parse_size_list("7"), (V{7}));
}

struct BadCase {
  const char* spec;
  const char* must_mention;
};

TEST(Sizes, BadListsNameTheTokenAndTheForms) {
  const BadCase cases[] = {
      {"1G:8:x2", "larger than MAX"},   {"1G:8", "exactly three fields"}, {"8:1G:x1", "factor must be"},
      {"8:1G:x0", "factor must be"},    {"8:1G:+0", "step must be > 0"},  {"8:1G:2", "'2'"},
      {"8:1G:x", "'x'"},                {"abc", "'abc'"},                 {"1K,,4K", "empty entry"},
      {"", "empty"},                    {"-8:16:x2", "'-8'"},             {"1T", "'1T'"},
      {"0:64:x2", "cannot start at 0"}, {"8:16:x2:4", "exactly three"},   {"1.5K", "'1.5K'"},
      {"99999999999999999999", "'99999999999999999999'"},
  };
  for (const auto& c : cases) {
    try {
      parse_size_list(c.spec);
      ADD_FAILURE() << "accepted bad list '" << c.spec << "'";
    } catch (const UsageError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(c.must_mention), std::string::npos) << c.spec << " -> " << msg;
      EXPECT_NE(msg.find("accepted forms"), std::string::npos) << c.spec << " -> " << msg;
    }
  }
}

// Found by fuzz_sizes: a range of billions of sizes was built in memory; now refused naming the step, while
// a range of exactly the most sizes still parses.
TEST(Sizes, RangesOfTooManySizesAreRefused) {
  EXPECT_THROW(parse_size_list("1K:6566666M:+6"), UsageError);
  try {
    parse_size_list("0:100000:+1");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("100001 sizes, more than 100000"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_size_list("0:99999:+1").size(), kMaxSweepSizes);
  EXPECT_EQ(parse_size_list("1:18446744073709551615:x2").size(), 64u);  // no overflow at the top
}

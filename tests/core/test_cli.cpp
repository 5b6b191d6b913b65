// Exit-code policy of run_program and the common options.
#include <gtest/gtest.h>

#include <cstdlib>

#include "app/cli.h"
#include "base/error.h"

using namespace parbench;

namespace {
int run(std::vector<std::string> args, const std::function<int()>& body, CommonOptions* out = nullptr) {
  CLI::App app("test", "prog");
  CommonOptions o;
  std::string sizes;
  add_common_options(app, o);
  app.add_option("--sizes", sizes)->check(size_list_validator());
  std::vector<char*> argv;
  args.insert(args.begin(), "prog");
  for (auto& a : args) argv.push_back(a.data());
  int rc = run_program(app, int(argv.size()), argv.data(), body);
  if (out) *out = o;
  return rc;
}
}  // namespace

TEST(Cli, ExitCodes) {
  CommonOptions o;
  EXPECT_EQ(run({"--device", "simt", "--csv", "a.csv", "-q"}, [] { return 0; }, &o), 0);
  EXPECT_EQ(o.device, "simt");
  EXPECT_EQ(o.csv, "a.csv");
  EXPECT_TRUE(o.quiet);
  testing::internal::CaptureStderr();
  EXPECT_EQ(run({"--bogus"}, [] { return 0; }), 2);
  EXPECT_EQ(run({"--sizes", "1G:8"}, [] { return 0; }), 2);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("--bogus"), std::string::npos);
  EXPECT_NE(err.find("1G:8"), std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_EQ(run({}, []() -> int { throw UsageError("bad thing 'x'"); }), 2);
  EXPECT_EQ(run({}, []() -> int { throw Error("broke"); }), 1);
  EXPECT_EQ(run({}, []() -> int { throw std::runtime_error("other"); }), 1);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("bad thing 'x'"), std::string::npos);
  EXPECT_NE(err.find("broke"), std::string::npos);
  EXPECT_EQ(run({}, [] { return 3; }), 3);
}

// PARBENCH_PARSE_ONLY=1 parses and stops before the body; a bad option still exits 2.
TEST(Cli, ParseOnlyStopsBeforeTheBody) {
  setenv("PARBENCH_PARSE_ONLY", "1", 1);
  bool ran = false;
  testing::internal::CaptureStderr();
  EXPECT_EQ(run({"--sizes", "8:1G:x2"}, [&] { ran = true; return 1; }), 0);
  EXPECT_EQ(run({"--sizes", "1G:8"}, [&] { ran = true; return 0; }), 2);
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("PARBENCH_PARSE_ONLY");
  EXPECT_FALSE(ran);
  EXPECT_NE(err.find("not run (PARBENCH_PARSE_ONLY=1)"), std::string::npos);
  EXPECT_EQ(run({}, [&] { ran = true; return 0; }), 0);
  EXPECT_TRUE(ran);
}

// The number validators accept their range and refuse the rest with the value and the accepted range named.
TEST(Cli, NumberValidatorsNameValueAndRange) {
  struct Case {
    CLI::Validator check;
    std::string value;
    std::string error;  // empty: accepted
  };
  const std::vector<Case> cases = {
      {greater_than(0), "0.5", ""},
      {greater_than(0), "0", "0 is not accepted: expected a number > 0"},
      {greater_than(0), "-3", "-3 is not accepted: expected a number > 0"},
      {greater_than(0), "fast", "'fast' is not a number; expected a number > 0"},
      {greater_than(0), "2x", "'2x' is not a number; expected a number > 0"},
      {at_least(0), "0", ""},
      {at_least(0), "-0.25", "-0.25 is not accepted: expected a number >= 0"},
      {in_range(1, 1 << 20), "1048576", ""},
      {in_range(1, 1 << 20), "1048577", "1048577 is not accepted: expected a number in 1..1048576"},
      {in_range(1, 1 << 20), "0", "0 is not accepted: expected a number in 1..1048576"},
  };
  for (Case c : cases) {
    std::string value = c.value;
    EXPECT_EQ(c.check(value), c.error) << c.value;
  }
  // Through a program: exit 2 with the option's name.
  CLI::App app("test", "prog");
  double timeout = 1;
  app.add_option("--timeout", timeout)->check(greater_than(0));
  std::vector<std::string> args = {"prog", "--timeout", "0"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_program(app, int(argv.size()), argv.data(), [] { return 0; }), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("--timeout: 0 is not accepted: expected a number > 0"),
            std::string::npos);
}

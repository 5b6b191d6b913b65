// Result files: path checks before work, CSV rows appended whole as they come, headers compared on append,
// JSON rewritten (valid) after each row, CSV lines split back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "app/output.h"
#include "base/error.h"
#include "tests/test_files.h"

using namespace parbench;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("pb_output_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string usage_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

}  // namespace

TEST(OutputPath, RefusesMissingDirectoryDirectoryAndFileParentNamingPathAndForm) {
  const fs::path d = fresh_dir("paths");
  EXPECT_THAT(usage_error_of([&] { check_output_path("--csv", (d / "no/such/x.csv").string()); }),
              AllOf(HasSubstr("--csv '" + (d / "no/such/x.csv").string() + "'"), HasSubstr("does not exist"),
                    HasSubstr("expected a file in an existing directory")));
  EXPECT_THAT(usage_error_of([&] { check_output_path("--json", d.string()); }), HasSubstr("is a directory"));
  std::ofstream(d / "plain") << "x";
  EXPECT_THAT(usage_error_of([&] { check_output_path("--trace", (d / "plain/t.json").string()); }),
              HasSubstr("is not a directory"));
  EXPECT_THAT(usage_error_of([&] { check_output_path("--csv", ""); }), HasSubstr("empty"));
  EXPECT_NO_THROW(check_output_path("--csv", (d / "ok.csv").string()));
  EXPECT_FALSE(fs::exists(d / "ok.csv"));  // checked, not created
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);  // no probe left behind
  EXPECT_THAT(usage_error_of([&] {
                check_output_paths({{"--csv", (d / "a").string()}, {"--json", (d / "." / "a").string()}});
              }),
              HasSubstr("--csv and --json name the same file"));
  fs::remove_all(d);
}

TEST(CsvRowFile, ReplaceCreatesTheFileAtTheFirstRowOnly) {
  const fs::path d = fresh_dir("replace");
  const fs::path p = d / "r.csv";
  std::ofstream(p) << "old,content\n1,2\n";
  {
    CsvRowFile f("--csv", p.string(), "a,b", CsvRowFile::Mode::replace);
    EXPECT_EQ(pbtest::read_file(p), "old,content\n1,2\n");  // untouched until a row exists
    f.append("1,2");
    EXPECT_EQ(pbtest::read_file(p), "a,b\n1,2\n");  // visible at once, before the object closes the file
    f.append("3,4");
    EXPECT_EQ(pbtest::read_file(p), "a,b\n1,2\n3,4\n");
  }
  {
    CsvRowFile none("--csv", (d / "never.csv").string(), "a,b", CsvRowFile::Mode::replace);
  }
  EXPECT_FALSE(fs::exists(d / "never.csv"));
  fs::remove_all(d);
}

TEST(CsvRowFile, AppendKeepsRowsAndRefusesAnotherHeaderNamingBoth) {
  const fs::path d = fresh_dir("append");
  const fs::path p = d / "a.csv";
  std::ofstream(p) << "a,b\n1,\"x,y\"\n2,z";  // no newline after the last row
  {
    CsvRowFile f("--csv", p.string(), "a,b", CsvRowFile::Mode::append);
    ASSERT_EQ(f.existing_rows().size(), 2u);
    EXPECT_EQ(f.existing_rows()[0], (std::vector<std::string>{"1", "x,y"}));
    f.append("3,w");
  }
  EXPECT_EQ(pbtest::read_file(p), "a,b\n1,\"x,y\"\n2,z\n3,w\n");
  const std::string msg =
      usage_error_of([&] { CsvRowFile g("--csv", p.string(), "a,c", CsvRowFile::Mode::append); });
  EXPECT_THAT(msg, AllOf(HasSubstr("its header is\n  a,b"), HasSubstr("writes\n  a,c")));
  EXPECT_EQ(pbtest::read_file(p), "a,b\n1,\"x,y\"\n2,z\n3,w\n");  // refused before anything was written
  fs::remove_all(d);
}

TEST(SplitCsvLine, RoundTripsRandomFieldsThroughCsvEscape) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab,\"\r 1";
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::string> fields(1 + rng() % 5);
    std::string line;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      for (unsigned k = rng() % 6; k > 0; --k) fields[i] += alphabet[rng() % alphabet.size()];
      line += (i ? "," : "") + csv_escape(fields[i]);
    }
    // A bare CR outside quotes is dropped (Windows line ends); csv_escape quotes every field holding one.
    EXPECT_EQ(split_csv_line(line), fields) << line;
  }
}

TEST(StreamingTable, EveryRowIsInBothFilesAsSoonAsItIsAdded) {
  const fs::path d = fresh_dir("stream");
  StreamingTable t({{"name"}, {"bytes"}, {"time_us", 2}}, (d / "t.csv").string(), (d / "t.json").string());
  for (int i = 0; i < 3; ++i) {
    t.add_row({std::string("r") + std::to_string(i), std::int64_t(i * 8), 1.5 * i});
    const std::string csv = pbtest::read_file(d / "t.csv");
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), i + 2);
    const auto j = nlohmann::json::parse(pbtest::read_file(d / "t.json"));
    ASSERT_EQ(j.size(), std::size_t(i + 1));
    EXPECT_EQ(j.back()["bytes"], i * 8);
  }
  EXPECT_EQ(pbtest::read_file(d / "t.csv"), "name,bytes,time_us\nr0,0,0.00\nr1,8,1.50\nr2,16,3.00\n");
  fs::remove_all(d);
}

// Report writers: text alignment, CSV read back with fast-cpp-csv-parser (quoting included), JSON, appends.
#include <gtest/gtest.h>
#include <libfccp/csv.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "app/report.h"
#include "tests/test_files.h"

using namespace parbench;
namespace fs = std::filesystem;

namespace {
Table sample() {
  Table t({{"name"}, {"bytes"}, {"time_us", 2}, {"note"}});
  t.add_row({std::string("ring"), std::int64_t(1024), 12.345, std::string("plain")});
  t.add_row({std::string("a,b"), std::int64_t(-7), 0.5, std::string("say \"hi\", twice")});
  t.add_row({std::string("empty"), std::int64_t(0), 1e6, std::monostate{}});
  return t;
}
fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("parbench_test_" + std::to_string(::getpid()) + "_" + name);
}
}  // namespace

TEST(Report, CsvRoundTripThroughFastCppCsvParser) {
  auto path = temp_path("round.csv");
  sample().write_csv(path.string());
  io::CSVReader<4, io::trim_chars<>, io::double_quote_escape<',', '"'>> in(path.string());
  in.read_header(io::ignore_no_column, "name", "bytes", "time_us", "note");
  std::string name, note;
  long bytes;
  double t;
  ASSERT_TRUE(in.read_row(name, bytes, t, note));
  EXPECT_EQ(name, "ring");
  EXPECT_EQ(bytes, 1024);
  EXPECT_DOUBLE_EQ(t, 12.35);  // two digits
  ASSERT_TRUE(in.read_row(name, bytes, t, note));
  EXPECT_EQ(name, "a,b");
  EXPECT_EQ(bytes, -7);
  EXPECT_EQ(note, "say \"hi\", twice");
  ASSERT_TRUE(in.read_row(name, bytes, t, note));
  EXPECT_EQ(note, "");
  EXPECT_DOUBLE_EQ(t, 1e6);
  EXPECT_FALSE(in.read_row(name, bytes, t, note));
  fs::remove(path);
}

TEST(Report, CsvAppendChecksHeader) {
  auto path = temp_path("append.csv");
  sample().write_csv(path.string());
  sample().write_csv(path.string(), true);
  std::string text = pbtest::read_file(path);
  EXPECT_EQ(text.find("name,bytes,time_us,note"), 0u);
  EXPECT_EQ(text.find("name,bytes", 1), std::string::npos);  // one header only
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 2 * 3);
  Table other({{"x"}});
  other.add_row({std::int64_t(1)});
  try {
    other.write_csv(path.string(), true);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("name,bytes,time_us,note"), std::string::npos);
  }
  EXPECT_EQ(pbtest::read_file(path), text);  // unchanged after the refused append
  fs::remove(path);
}

// fast-cpp-csv-parser reads line by line, so a field with a line break is checked as text.
TEST(Report, CsvQuotesLineBreaks) {
  EXPECT_EQ(csv_escape("plain"), "plain");
  EXPECT_EQ(csv_escape("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_escape("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csv_escape("q\"uote"), "\"q\"\"uote\"");
}

TEST(Report, JsonKeysAndTypes) {
  auto path = temp_path("out.json");
  sample().write_json(path.string());
  auto j = nlohmann::json::parse(pbtest::read_file(path));
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[1]["name"], "a,b");
  EXPECT_EQ(j[0]["bytes"], 1024);
  EXPECT_DOUBLE_EQ(j[0]["time_us"].get<double>(), 12.345);
  EXPECT_TRUE(j[2]["note"].is_null());
  fs::remove(path);
}

TEST(Report, TextIsAligned) {
  std::ostringstream os;
  Table t({{"impl"}, {"busbw", 1}});
  t.add_row({std::string("ring"), 12.34});
  t.add_row({std::string("mpi"), 100.0});
  t.write_text(os);
  EXPECT_EQ(os.str(), "impl  busbw\nring   12.3\n mpi  100.0\n");
  EXPECT_THROW(t.add_row({std::string("only one")}), Error);
}

TEST(Report, WriteToMissingDirectoryFailsCleanly) {
  auto dir = temp_path("no_such_dir");
  try {
    sample().write_csv((dir / "x.csv").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.csv"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(dir));
}

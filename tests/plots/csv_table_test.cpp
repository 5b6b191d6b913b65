// CsvTable: columns by name in any order, extra columns ignored, empty cells, and errors naming file/line/column.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "plot_test_util.h"
#include "plots/csv_table.h"

namespace parbench::plots {
namespace {

using test::ScratchDir;
using test::usage_error;
using test::write_file;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::vector<ColumnSpec> kColumns = {{"impl"}, {"bytes"}, {"busbw_gbps"}, {"estimate", false}, {"note", false}};

TEST(CsvTable, ReadsColumnsByNameInAnyOrderIgnoringExtras) {
  ScratchDir dir;
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> bw(0.5, 50.0);
  const double a = bw(rng), b = bw(rng);
  char text[256];
  std::snprintf(text, sizeof text, "extra,busbw_gbps,bytes,impl,note\nx,%.17g,1024,ring,\"a, b\"\ny, %.17g ,8,\"tree\",\n", a, b);
  write_file(dir.file("r.csv"), text);
  const CsvTable t = CsvTable::read(dir.file("r.csv"), kColumns);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.text(0, "impl"), "ring");
  EXPECT_EQ(t.text(1, "impl"), "tree");
  EXPECT_EQ(t.number(0, "busbw_gbps"), a);
  EXPECT_EQ(t.number(1, "busbw_gbps"), b);  // spaces trimmed
  EXPECT_EQ(t.integer(0, "bytes"), 1024);
  EXPECT_EQ(t.text(0, "note"), "a, b");  // quoted comma
  EXPECT_TRUE(t.empty(1, "note"));
  EXPECT_TRUE(t.has_column("note"));
  EXPECT_FALSE(t.has_column("estimate"));
  EXPECT_FALSE(t.optional_number(0, "estimate").has_value());
  EXPECT_EQ(t.line(0), 2u);
  EXPECT_EQ(t.line(1), 3u);
}

TEST(CsvTable, SkipsBlankLinesAndKeepsLineNumbers) {
  ScratchDir dir;
  write_file(dir.file("r.csv"), "impl,bytes,busbw_gbps\nring,8,1.5\n\nring,16,oops\n");
  const CsvTable t = CsvTable::read(dir.file("r.csv"), kColumns);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_THAT(usage_error([&] { t.number(1, "busbw_gbps"); }),
              AllOf(HasSubstr(dir.file("r.csv") + ":4:"), HasSubstr("'busbw_gbps'"), HasSubstr("'oops' is not a number")));
}

TEST(CsvTable, MissingRequiredColumnNamesFileLineAndColumn) {
  ScratchDir dir;
  write_file(dir.file("r.csv"), "impl,bytes,algbw_gbps\nring,8,1.0\n");
  EXPECT_THAT(usage_error([&] { CsvTable::read(dir.file("r.csv"), kColumns); }),
              AllOf(HasSubstr(dir.file("r.csv") + ":1:"), HasSubstr("missing column 'busbw_gbps'")));
}

TEST(CsvTable, NonNumberNamesFileLineAndColumn) {
  ScratchDir dir;
  write_file(dir.file("r.csv"), "impl,bytes,busbw_gbps\nring,8,1.0\nring,16,fast\n");
  const CsvTable t = CsvTable::read(dir.file("r.csv"), kColumns);
  EXPECT_EQ(t.number(0, "busbw_gbps"), 1.0);
  EXPECT_THAT(usage_error([&] { t.number(1, "busbw_gbps"); }),
              AllOf(HasSubstr(dir.file("r.csv") + ":3: column 'busbw_gbps'"), HasSubstr("'fast'")));
  EXPECT_THAT(usage_error([&] { t.integer(1, "impl"); }), HasSubstr("'ring' is not a number"));
}

TEST(CsvTable, NonIntegerAndEmptyAndInfinite) {
  ScratchDir dir;
  write_file(dir.file("r.csv"), "impl,bytes,busbw_gbps\nring,8.5,\nring,8,inf\n");
  const CsvTable t = CsvTable::read(dir.file("r.csv"), kColumns);
  EXPECT_THAT(usage_error([&] { t.integer(0, "bytes"); }), HasSubstr(":2: column 'bytes': '8.5' is not an integer"));
  EXPECT_THAT(usage_error([&] { t.number(0, "busbw_gbps"); }), HasSubstr(":2: column 'busbw_gbps': the cell is empty"));
  EXPECT_FALSE(t.optional_number(0, "busbw_gbps").has_value());
  EXPECT_THAT(usage_error([&] { t.number(1, "busbw_gbps"); }), HasSubstr(":3: column 'busbw_gbps': 'inf'"));
}

TEST(CsvTable, NoDataRows) {
  ScratchDir dir;
  write_file(dir.file("r.csv"), "impl,bytes,busbw_gbps\n");
  EXPECT_THAT(usage_error([&] { CsvTable::read(dir.file("r.csv"), kColumns); }),
              AllOf(HasSubstr(dir.file("r.csv")), HasSubstr("no data rows")));
  write_file(dir.file("empty.csv"), "");
  EXPECT_THAT(usage_error([&] { CsvTable::read(dir.file("empty.csv"), kColumns); }), HasSubstr("empty.csv"));
}

TEST(CsvTable, MissingFile) {
  ScratchDir dir;
  EXPECT_THAT(usage_error([&] { CsvTable::read(dir.file("nope.csv"), kColumns); }),
              AllOf(HasSubstr("cannot open input"), HasSubstr(dir.file("nope.csv")), HasSubstr("No such file")));
}

TEST(CsvTable, RowWithTooFewFieldsNamesFileAndLine) {
  ScratchDir dir;
  write_file(dir.file("r.csv"), "impl,bytes,busbw_gbps\nring,8,1\nring,16\n");
  EXPECT_THAT(usage_error([&] { CsvTable::read(dir.file("r.csv"), kColumns); }),
              AllOf(HasSubstr("r.csv"), HasSubstr("line 3")));
}

}  // namespace
}  // namespace parbench::plots

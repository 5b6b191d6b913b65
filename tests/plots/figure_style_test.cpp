// What a reader sees, checked in the gnuplot script parbench-plot writes (--script): within a panel no colour
// drawn twice in one line style, every key entry its own colour, at most kMaxSeriesPerPanel colours (more series go
// to further panels, an implementation keeping its colour in all of them), and a caption naming the machine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "plot_test_util.h"
#include "plots/figures.h"

namespace parbench::plots {
namespace {

using test::read_file;
using test::run_plot;
using test::ScratchDir;
using test::write_file;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// One line of a plot command: a data block ('-') or a key-only entry (NaN) or a function (100).
struct Entry {
  bool data = false;
  std::string color, dash = "1", title;  // title empty: notitle
};

// The entries of a "plot ..." command, split at the commas outside quotes.
std::vector<Entry> entries_of(const std::string& plot) {
  std::vector<std::string> parts(1);
  char quote = 0;
  for (std::size_t i = 5; i < plot.size(); ++i) {
    const char c = plot[i];
    if (quote == '"' && c == '\\' && i + 1 < plot.size()) {
      parts.back() += c;
      parts.back() += plot[++i];
      continue;
    }
    if (quote == 0 && (c == '\'' || c == '"')) quote = c;
    else if (quote == c) quote = 0;
    if (quote == 0 && c == ',') {
      parts.emplace_back();
      continue;
    }
    parts.back() += c;
  }
  std::vector<Entry> out;
  for (std::string p : parts) {
    p.erase(0, p.find_first_not_of(' '));
    Entry e;
    e.data = p.rfind("'-'", 0) == 0;
    // The line's colour is the last one given (boxes name their border's first).
    if (const auto at = p.rfind("lc rgb '"); at != std::string::npos) e.color = p.substr(at + 8, 7);
    if (const auto at = p.find(" dt "); at != std::string::npos) e.dash = p.substr(at + 4, p.find(' ', at + 4) - at - 4);
    if (const auto at = p.find(" title '"); at != std::string::npos)
      e.title = p.substr(at + 8, p.rfind('\'') - at - 8);
    out.push_back(e);
  }
  return out;
}

// Every plot command of a script: one per panel.
std::vector<std::vector<Entry>> panels_of(const std::string& script) {
  std::vector<std::vector<Entry>> panels;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("plot ", 0) == 0) panels.push_back(entries_of(line));
  return panels;
}

// The figure's heading (multiplot title, or the title of a single plot): its lines.
std::vector<std::string> heading_of(const std::string& script) {
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("set multiplot", 0) != 0 && line.rfind("set title \"", 0) != 0) continue;
    const auto open = line.find(" title \"");
    if (open == std::string::npos) continue;
    std::vector<std::string> lines(1);
    for (std::size_t i = open + 8; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) {
        if (line[++i] == 'n') lines.emplace_back();
        else lines.back() += line[i];
      } else {
        lines.back() += line[i];
      }
    }
    return lines;
  }
  return {};
}

// The rules of a readable panel; returns the colour of each key entry (title -> colour) for cross-panel checks.
// Categories (memory's stacked bars) are not series: their count is fixed, only the colour rules apply.
std::map<std::string, std::string> expect_readable(const std::vector<Entry>& panel, const std::string& where,
                                                   bool categories = false) {
  SCOPED_TRACE(where);
  std::set<std::pair<std::string, std::string>> styles;
  std::set<std::string> colors, key_colors;
  std::map<std::string, std::string> key;
  for (const Entry& e : panel) {
    if (!e.data) continue;
    EXPECT_TRUE(styles.insert({e.color, e.dash}).second) << "colour " << e.color << " drawn twice as dt " << e.dash;
    colors.insert(e.color);
    if (!e.title.empty()) {
      EXPECT_TRUE(key_colors.insert(e.color).second) << "two key entries in " << e.color << ": " << e.title;
      key[e.title] = e.color;
    }
  }
  if (!categories) {
    EXPECT_LE(colors.size(), static_cast<std::size_t>(kMaxSeriesPerPanel)) << "too many series in one panel";
  }
  return key;
}

// bench_allreduce rows: every implementation, out-of-place and in-place, at each rank count.
std::string allreduce_csv(const std::vector<std::string>& impls, const std::vector<int>& ranks) {
  std::string csv = "collective,impl,device,ranks,nodes,dtype,op,root,inplace,bytes,count,time_us,algbw_gbps,"
                    "busbw_gbps,wrong\n";
  int k = 0;
  for (int n : ranks)
    for (const std::string& impl : impls)
      for (int inplace : {0, 1})
        for (int bytes = 8; bytes <= 8192; bytes *= 4) {
          const double t = 10 + bytes / (1000.0 + 100 * (++k % 7));
          csv += "allreduce," + impl + ",cpu," + std::to_string(n) + ",1,f32,sum,0," + std::to_string(inplace) + "," +
                 std::to_string(bytes) + "," + std::to_string(bytes / 4) + "," + std::to_string(t) + "," +
                 std::to_string(bytes / t / 1e3) + "," + std::to_string(1.5 * bytes / t / 1e3) + ",0\n";
        }
  return csv;
}

class FigureStyle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  }
  // parbench-plot with --script; the script's text.
  std::string script(std::vector<std::string> args) {
    args.insert(args.end(), {"--script", dir_.file("fig.gp")});
    const auto r = run_plot(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_file(dir_.file("fig.gp"));
  }
  ScratchDir dir_;
};

// The old gallery figure: six implementations in and out of place at 4 ranks, once twelve key entries with
// repeated colours. Now six colours, the halves as line styles named once in the key.
TEST_F(FigureStyle, SixImplementationsBothHalvesInOnePanel) {
  write_file(dir_.file("a.csv"), allreduce_csv({"mpi", "naive", "rd", "rhd", "ring", "tree"}, {4}));
  const std::string gp = script({"busbw", "-i", dir_.file("a.csv"), "-o", dir_.file("a.png"), "--machine",
                                 "2-core VM (4 ranks oversubscribed)"});
  const auto panels = panels_of(gp);
  ASSERT_THAT(panels, SizeIs(1));
  const auto key = expect_readable(panels[0], "4 ranks");
  EXPECT_THAT(key, SizeIs(6));
  std::vector<std::string> titles;
  for (const Entry& e : panels[0])
    if (!e.title.empty()) titles.push_back(e.title);
  EXPECT_THAT(titles, ElementsAre("mpi", "naive", "rd", "rhd", "ring", "tree", "out-of-place", "in-place"));
  EXPECT_THAT(heading_of(gp), ElementsAre(HasSubstr("Bus bandwidth vs message size"),
                                          "measured on: 2-core VM (4 ranks oversubscribed), device cpu"));
}

// Seven implementations at two rank counts: a row per rank count, the implementations over two columns (4 + 3), each
// keeping its colour in both rows.
TEST_F(FigureStyle, SevenImplementationsSplitOverPanelsKeepTheirColours) {
  write_file(dir_.file("a.csv"), allreduce_csv({"mpi", "mpi-nb", "naive", "rd", "rhd", "ring", "tree"}, {2, 4}));
  for (const char* figure : {"busbw", "latency"}) {
    const std::string gp = script({figure, "-i", dir_.file("a.csv"), "-o", dir_.file("a.png")});
    EXPECT_THAT(gp, HasSubstr("set multiplot layout 2,2 "));
    const auto panels = panels_of(gp);
    ASSERT_THAT(panels, SizeIs(4));
    std::map<std::string, std::string> colour_of;
    std::set<std::string> colours;
    for (std::size_t p = 0; p < panels.size(); ++p) {
      for (const auto& [title, colour] : expect_readable(panels[p], std::string(figure) + " panel " + std::to_string(p))) {
        if (title == "out-of-place" || title == "in-place") continue;
        const auto [it, fresh] = colour_of.emplace(title, colour);
        EXPECT_EQ(it->second, colour) << title << " changes colour between panels";
        if (fresh) {
          EXPECT_TRUE(colours.insert(colour).second) << title << " shares " << colour;
        }
      }
    }
    EXPECT_THAT(colour_of, SizeIs(7));
    // Without --machine the caption still says what the file knows and that the machine is not named.
    EXPECT_THAT(heading_of(gp), ElementsAre(HasSubstr("(allreduce, f32)"),
                                            "measured on: device cpu, machine not named (--machine)"));
  }
}

// A share with no rows at one rank count leaves its place in the grid blank; tiny bandwidths keep a positive range.
TEST_F(FigureStyle, AnEmptyShareLeavesItsPlaceBlank) {
  std::string csv = allreduce_csv({"mpi", "mpi-nb", "naive", "rd", "rhd", "ring", "tree"}, {2});
  csv += "allreduce,mpi,cpu,4,1,f32,sum,0,0,8,2,900,0.0000000089,0.0000000133,0\n";
  write_file(dir_.file("a.csv"), csv);
  const std::string gp = script({"busbw", "-i", dir_.file("a.csv"), "-o", dir_.file("a.png")});
  EXPECT_THAT(panels_of(gp), SizeIs(3));
  EXPECT_THAT(gp, HasSubstr("\nset multiplot next\n"));
  EXPECT_THAT(gp, HasSubstr("set yrange [8.3125e-09:"));
  EXPECT_GT(test::check_png(dir_.file("a.png")).distinct_bytes, 32u);
}

// Eight schemes in the scaling figure: two columns of four, on the same axes.
TEST_F(FigureStyle, ScalingWithMoreSchemesThanAPanelHoldsUsesColumns) {
  std::string csv = "scheme,device,ranks,samples_per_s\n";
  for (const char* s : {"ddp", "fsdp", "zero1", "zero2", "zero3", "tp", "pp", "hybrid"})
    for (int n : {1, 2, 4}) csv += std::string(s) + ",cpu," + std::to_string(n) + "," + std::to_string(10 * n) + "\n";
  write_file(dir_.file("s.csv"), csv);
  const std::string gp = script({"scaling", "-i", dir_.file("s.csv"), "-o", dir_.file("s.png"), "--machine", "rig 7"});
  const auto panels = panels_of(gp);
  ASSERT_THAT(panels, SizeIs(4));  // throughput and efficiency, twice
  for (std::size_t p = 0; p < panels.size(); ++p) expect_readable(panels[p], "scaling panel " + std::to_string(p));
  EXPECT_THAT(gp, HasSubstr("set origin 0.5,0\n"));
  EXPECT_THAT(heading_of(gp), ElementsAre(HasSubstr("Strong scaling"), "measured on: rig 7, device cpu"));
}

TEST_F(FigureStyle, EveryFigureCarriesTheMachine) {
  write_file(dir_.file("t.csv"), test::training_csv(3));
  write_file(dir_.file("c.csv"), test::collectives_csv(3));
  for (const char* figure : {"scaling", "bubble", "memory"}) {
    const std::string gp =
        script({figure, "-i", dir_.file("t.csv"), "-o", dir_.file("f.png"), "--machine", "8x H100 SXM, cpu device"});
    SCOPED_TRACE(figure);
    // The text names the device already: not said twice.
    EXPECT_THAT(heading_of(gp), ElementsAre(testing::Not(HasSubstr("cpu")), "measured on: 8x H100 SXM, cpu device"));
    for (const auto& panel : panels_of(gp)) expect_readable(panel, figure, std::string(figure) == "memory");
  }
  write_file(dir_.file("trace.json"), test::pipeline_trace_json(4, 4, 1));
  std::string gp = script({"timeline", "-i", dir_.file("trace.json"), "-o", dir_.file("f.png")});
  EXPECT_THAT(heading_of(gp), ElementsAre(HasSubstr("Step timeline"), "measured on: machine not named (--machine)"));
  gp = script({"timeline", "-i", dir_.file("trace.json"), "-o", dir_.file("f.png"), "--title", "it's \"one\" step",
               "--machine", "VM"});
  EXPECT_THAT(heading_of(gp), ElementsAre("it's \"one\" step", "measured on: VM"));
  // A trace that names its device (otherData.device) has it in the caption.
  std::string named = test::pipeline_trace_json(2, 2, 1);
  named.replace(named.rfind('}'), 1, ",\"otherData\":{\"device\":\"cuda:0\"}}");
  write_file(dir_.file("named.json"), named);
  gp = script({"timeline", "-i", dir_.file("named.json"), "-o", dir_.file("f.png"), "--machine", "node 3"});
  EXPECT_THAT(heading_of(gp), ElementsAre(HasSubstr("Step timeline"), "measured on: node 3, device cuda:0"));
}

TEST(Palette, EightDistinctColoursAndEvenSplits) {
  std::set<std::string> colours;
  for (int i = 0; i < kPaletteSize; ++i) colours.insert(series_color(i));
  EXPECT_THAT(colours, SizeIs(kPaletteSize));
  EXPECT_EQ(series_color(kPaletteSize), series_color(0));
  using Parts = std::vector<std::vector<int>>;
  EXPECT_EQ(split_colors({3, 1, 2, 1}), (Parts{{1, 2, 3}}));
  EXPECT_EQ(split_colors({0, 1, 2, 3, 4, 5}), (Parts{{0, 1, 2, 3, 4, 5}}));
  EXPECT_EQ(split_colors({0, 1, 2, 3, 4, 5, 6}), (Parts{{0, 1, 2, 3}, {4, 5, 6}}));
  EXPECT_EQ(split_colors({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), (Parts{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}, {10, 11, 12}}));
  // Indices the palette draws alike (0 and 8) never share a panel.
  EXPECT_EQ(split_colors({0, 8}), (Parts{{0}, {8}}));
  EXPECT_TRUE(split_colors({}).empty());
}

TEST(Caption, MachineAndDevices) {
  EXPECT_EQ(machine_caption("", {}), "measured on: machine not named (--machine)");
  EXPECT_EQ(machine_caption("", {"cpu", "simt"}), "measured on: devices cpu, simt, machine not named (--machine)");
  EXPECT_EQ(machine_caption("DGX H100", {"cuda:0"}), "measured on: DGX H100, device cuda:0");
  EXPECT_EQ(machine_caption("2-core VM, CPU device", {"cpu"}), "measured on: 2-core VM, CPU device");
  EXPECT_EQ(quote_lines({"a \"b\" \\ c", "d\ne"}), "\"a \\\"b\\\" \\\\ c\\nd e\"");
}

}  // namespace
}  // namespace parbench::plots

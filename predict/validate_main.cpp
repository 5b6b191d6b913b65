// predict_validate: every published table given (predict/published/*.csv) predicted row by row on its built-in
// system, with the range the sources' spread gives, the mean error per table and the leave-one-table-out error.
//   predict_validate FILE.csv... [--expect TABLE=MEAN_PERCENT]...
// --expect fails (exit 1) when a table's mean |error| moves more than 0.1 percentage point from MEAN_PERCENT: the
// predictor is deterministic, so this guards against unnoticed changes. Bad input exits 2 naming it.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "predict/validate.h"

using namespace parbench;
using namespace parbench::predict;

namespace {

struct TableSummary {
  std::vector<std::pair<const PublishedRow*, RowResult>> rows;
  double sum_abs = 0, max_abs = 0, held_sum_abs = 0, held_max_abs = 0;
  int inside = 0;
};

std::string choices_text(const std::set<std::string>& c) {
  std::string s;
  for (const std::string& x : c) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

void print_table(const std::string& name, const TableSummary& t) {
  std::printf("\n# %s (%s)\n", name.c_str(), t.rows.front().first->system.c_str());
  std::printf("%-34s %-18s %10s %10s %21s %8s %7s %10s\n", "row", "measure", "published", "predicted", "range (low - high)",
              "error", "inside", "held out");
  for (const auto& [r, x] : t.rows) {
    const bool in = r->published >= x.low && r->published <= x.high;
    std::printf("%-34s %-18s %10.2f %10.2f %10.2f - %8.2f %+7.1f%% %7s %+9.1f%%\n", r->row.c_str(), r->measure.c_str(),
                r->published, x.predicted, x.low, x.high, 100 * x.error, in ? "yes" : "no", 100 * x.held_out_error);
  }
  const double n = double(t.rows.size());
  std::printf("%s: mean |error| %.2f%%, max %.2f%% over %zu rows; %d of %zu published values inside the range\n",
              name.c_str(), 100 * t.sum_abs / n, 100 * t.max_abs, t.rows.size(), t.inside, t.rows.size());
}

int run(int argc, char** argv) {
  std::vector<std::string> files;
  std::map<std::string, double> expect;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--expect" && i + 1 < argc) {
      const std::string e = argv[++i];
      const auto eq = e.find('=');
      char* end = nullptr;
      const double v = eq == std::string::npos ? 0 : std::strtod(e.c_str() + eq + 1, &end);
      if (eq == std::string::npos || !end || *end || end == e.c_str() + eq + 1)
        throw UsageError("--expect '" + e + "' is not TABLE=MEAN_PERCENT, e.g. korthikanti2022-table5=2.08");
      expect[e.substr(0, eq)] = v;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("option '" + a + "' is unknown; accepted: FILE.csv... [--expect TABLE=MEAN_PERCENT]...");
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) throw UsageError("no published-table CSV given; accepted: FILE.csv... [--expect TABLE=PCT]...");
  std::vector<PublishedRow> rows;
  for (const std::string& f : files)
    for (PublishedRow& r : read_published(f)) rows.push_back(std::move(r));
  std::map<std::string, TableSummary> tables;
  std::vector<std::string> order;
  for (const PublishedRow& r : rows) {
    if (!tables.count(r.table)) order.push_back(r.table);
    TableSummary& t = tables[r.table];
    const RowResult x = evaluate(r);
    t.rows.push_back({&r, x});
    t.sum_abs += std::abs(x.error), t.max_abs = std::max(t.max_abs, std::abs(x.error));
    t.held_sum_abs += std::abs(x.held_out_error), t.held_max_abs = std::max(t.held_max_abs, std::abs(x.held_out_error));
    t.inside += r.published >= x.low && r.published <= x.high;
  }
  for (const std::string& name : order) print_table(name, tables[name]);
  std::printf("\n# leave one table out: each table with the modelling choices made while looking at it undone\n");
  for (const std::string& name : order) {
    const TableSummary& t = tables[name];
    std::printf("%s held out: mean |error| %.2f%%, max %.2f%% (undone: %s)\n", name.c_str(),
                100 * t.held_sum_abs / t.rows.size(), 100 * t.held_max_abs,
                choices_text(t.rows.front().first->shaped_by).c_str());
  }
  if (order.size() == 1) std::printf("one table only: no other table to check the choices against\n");
  int failed = 0;
  for (const auto& [name, want] : expect) {
    if (!tables.count(name)) throw UsageError("--expect names table '" + name + "', which no file holds");
    const double got = 100 * tables[name].sum_abs / tables[name].rows.size();
    if (std::abs(got - want) > 0.1) {
      std::printf("CHANGED: %s mean |error| %.2f%%, expected %.2f%% (+-0.1)\n", name.c_str(), got, want);
      ++failed;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "predict_validate: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "predict_validate: " << e.what() << "\n";
    return 1;
  }
}

// predict_validate: every published table given (predict/published/*.csv) predicted row by row on its built-in
// system, with the range the sources' spread gives, the mean error per table and the leave-one-table-out error.
//   predict_validate FILE.csv... [--expect TABLE=MEAN_PERCENT]... [--system NAME=FILE]... [--list-linears SYSTEMS]
//                    [--list-attention SYSTEMS]
// --expect fails (exit 1) when a table's mean |error| moves more than 0.1 percentage point from MEAN_PERCENT: the
// predictor is deterministic, so this guards against unnoticed changes. --system predicts the rows of system NAME
// on the system file FILE instead (e.g. the built-in one with measured linears; another built-in name works too). --list-linears prints, instead of
// predicting, the weight matmuls (TOKENSxINxOUT, comma-joined, as bench_kernels --linear takes them) that the rows
// on SYSTEMS (comma-joined names, or all) run, with the pieces their userbuffers split them into: what a system's
// measured linears must hold for those rows;
// --list-attention likewise their flash attention as B,T,NH,HS (per GPU: NH is the heads over tp), space-joined, as
// scripts/sdpa_compare.py --extra-shape takes them. Bad input exits 2 naming it.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "predict/costs.h"
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
  std::printf("%-34s %-23s %10s %10s %21s %8s %7s %10s\n", "row", "measure", "published", "predicted",
              "range (low - high)", "error", "inside", "held out");
  for (const auto& [r, x] : t.rows) {
    const bool in = r->published >= x.low && r->published <= x.high;
    std::printf("%-34s %-23s %10.2f %10.2f %10.2f - %8.2f %+7.1f%% %7s %+9.1f%%\n", r->row.c_str(),
                r->measure.c_str(), r->published, x.predicted, x.low, x.high, 100 * x.error, in ? "yes" : "no",
                100 * x.held_out_error);
  }
  const double n = double(t.rows.size());
  std::printf("%s: mean |error| %.2f%%, max %.2f%% over %zu rows; %d of %zu published values inside the range\n",
              name.c_str(), 100 * t.sum_abs / n, 100 * t.max_abs, t.rows.size(), t.inside, t.rows.size());
}

struct Options {
  std::vector<std::string> files;
  std::map<std::string, double> expect;
  std::map<std::string, std::string> system_files;  // --system NAME=FILE
  std::optional<std::string> list_linears;          // --list-linears SYSTEMS
  std::optional<std::string> list_attention;        // --list-attention SYSTEMS
};

constexpr const char* kAccepted =
    "FILE.csv... [--expect TABLE=MEAN_PERCENT]... [--system NAME=FILE]... [--list-linears SYSTEMS] "
    "[--list-attention SYSTEMS]";

// "KEY=VALUE" split at its first '=', both sides non-empty; otherwise a UsageError naming the option and its `form`.
std::pair<std::string, std::string> key_value(const std::string& option, const std::string& text,
                                              const std::string& form) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(option + " '" + text + "' is not " + form);
  return {text.substr(0, eq), text.substr(eq + 1)};
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--expect" && has_value) {
      const auto [table, percent] = key_value(a, argv[++i], "TABLE=MEAN_PERCENT, e.g. korthikanti2022-table5=2.08");
      char* end = nullptr;
      const double v = std::strtod(percent.c_str(), &end);
      if (!end || *end)
        throw UsageError("--expect '" + table + "=" + percent + "' is not TABLE=MEAN_PERCENT, e.g. "
                         "korthikanti2022-table5=2.08");
      o.expect[table] = v;
    } else if (a == "--system" && has_value) {
      const auto [name, file] = key_value(a, argv[++i], "NAME=FILE, e.g. dgx-h100=measured-h100.json");
      o.system_files[name] = file;
    } else if (a == "--list-linears" && has_value) {
      o.list_linears = argv[++i];
    } else if (a == "--list-attention" && has_value) {
      o.list_attention = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("option '" + a + "' is unknown or lacks its value; accepted: " + kAccepted);
    } else {
      o.files.push_back(a);
    }
  }
  if (o.files.empty()) throw UsageError(std::string("no published-table CSV given; accepted: ") + kAccepted);
  return o;
}

// The rows on `systems` (comma-joined names, or "all"); UsageError naming `option` when none is.
std::vector<const PublishedRow*> rows_on(const std::vector<PublishedRow>& rows, const std::string& systems,
                                         const std::string& option) {
  std::set<std::string> wanted;
  for (std::size_t at = 0; at <= systems.size();) {
    const std::size_t comma = std::min(systems.find(',', at), systems.size());
    wanted.insert(systems.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<const PublishedRow*> out;
  for (const PublishedRow& r : rows)
    if (wanted.count("all") || wanted.count(r.system)) out.push_back(&r);
  if (out.empty())
    throw UsageError(option + " '" + systems + "': no row is on those systems; accepted: system names of the "
                     "tables' rows (e.g. dgx-h100), comma-joined, or all");
  return out;
}

// Each distinct (a, b, c) of `shapes` printed with `form` (three or four %.0f) and joined by `separator`.
template <std::size_t N>
std::string joined(const std::set<std::array<double, N>>& shapes, const char* form, const char* separator) {
  std::string out;
  for (const auto& v : shapes) {
    char item[128];
    if constexpr (N == 3) std::snprintf(item, sizeof item, form, v[0], v[1], v[2]);
    else std::snprintf(item, sizeof item, form, v[0], v[1], v[2], v[3]);
    out += (out.empty() ? "" : separator) + std::string(item);
  }
  return out;
}

// The weight matmuls of the rows on `systems` (and the pieces their userbuffers split them into), each shape once, as
// TOKENSxINxOUT joined by commas.
std::string linears_of(const std::vector<PublishedRow>& rows, const std::string& systems) {
  std::set<std::array<double, 3>> shapes;
  for (const PublishedRow* r : rows_on(rows, systems, "--list-linears")) {
    for (const LinearDims& d : layout_linears(r->layout).all()) shapes.insert({d.tokens, d.in, d.out});
    for (const LinearDims& d : userbuffer_pieces(r->layout)) shapes.insert({d.tokens, d.in, d.out});
  }
  return joined(shapes, "%.0fx%.0fx%.0f", ",");
}

// The flash attention of the rows on `systems` (rows with plain attention have none), each shape once, as
// scripts/sdpa_compare.py's B,T,NH,HS joined by spaces.
std::string attention_of(const std::vector<PublishedRow>& rows, const std::string& systems) {
  std::set<std::array<double, 4>> shapes;
  for (const PublishedRow* r : rows_on(rows, systems, "--list-attention"))
    if (r->layout.model.flash_attention) {
      const AttentionDims d = layout_attention(r->layout);
      shapes.insert({d.batch, d.seq, d.heads, d.head_dim});
    }
  if (shapes.empty())
    throw UsageError("--list-attention '" + systems + "': no row on those systems runs flash attention (the "
                     "attention column); plain attention is timed from the matrix and HBM curves");
  return joined(shapes, "%.0f,%.0f,%.0f,%.0f", " ");
}

int run(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::vector<PublishedRow> rows;
  for (const std::string& f : o.files)
    for (PublishedRow& r : read_published(f)) rows.push_back(std::move(r));
  if (o.list_linears) {
    std::printf("%s\n", linears_of(rows, *o.list_linears).c_str());
    return 0;
  }
  if (o.list_attention) {
    std::printf("%s\n", attention_of(rows, *o.list_attention).c_str());
    return 0;
  }
  for (const auto& [name, file] : o.system_files) {
    bool used = false;
    for (PublishedRow& r : rows)
      if (r.system == name) r.system = file, used = true;
    if (!used) throw UsageError("--system names '" + name + "', which no row is predicted on");
  }
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
  for (const auto& [name, want] : o.expect) {
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

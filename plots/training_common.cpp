// The row filters, keys, heading and rendering the training CSV figures share.
#include "plots/training_common.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "base/error.h"
#include "core/csv_columns.h"

namespace parbench::plots {
namespace train_csv = csv::train;
namespace {

std::string title_or(const FigureOptions& o, const std::string& base, const std::string& common) {
  if (!o.title.empty()) return o.title;
  return common.empty() ? base : base + " (" + common + ")";
}

}  // namespace

bool keep_row(const CsvTable& t, std::size_t r, const TrainingFilter& f) {
  if (!f.models.empty() && !t.has_column(train_csv::model))
    throw UsageError(t.path() + ": --model given but the file has no 'model' column");
  if (!f.ranks.empty() && !t.has_column(train_csv::ranks))
    throw UsageError(t.path() + ": --ranks given but the file has no 'ranks' column");
  if (!wanted(f.schemes, t.text(r, train_csv::scheme))) return false;
  if (!f.models.empty() && !wanted(f.models, t.text(r, train_csv::model))) return false;
  if (!f.ranks.empty() && !std::count(f.ranks.begin(), f.ranks.end(), t.integer(r, train_csv::ranks))) return false;
  return true;
}

Key row_key(const CsvTable& t, std::size_t r, const std::vector<KeyField>& fields) {
  Key key;
  for (const KeyField& f : fields) key.push_back(t.has_column(f.column) ? t.text(r, f.column) : "");
  return key;
}

void no_rows(const CsvTable& t, const std::string& what) { throw UsageError(t.path() + ": no rows to plot " + what); }

std::vector<std::string> field_values(const std::vector<Key>& keys, std::size_t field) {
  std::set<std::string> values;
  for (const Key& k : keys)
    if (!k[field].empty()) values.insert(k[field]);
  return {values.begin(), values.end()};
}

std::string heading(const FigureOptions& o, const std::string& base, const std::string& common,
                    const std::vector<std::string>& devices) {
  return quote_lines({title_or(o, base, common), machine_caption(o.machine, devices)});
}

void finish(const PlotScript& sc, const FigureOptions& o) {
  const std::string warnings = render(sc, o.render);
  if (!warnings.empty()) std::fprintf(stderr, "gnuplot: %s", warnings.c_str());
}

}  // namespace parbench::plots

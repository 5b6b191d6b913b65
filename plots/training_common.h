// What the figures of a training CSV share (scaling and bubble in plots/training.cpp, memory in
// plots/memory_figure.cpp): the row filters, a row's key, the heading and the no-rows error.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "plots/figures.h"
#include "plots/grouping.h"

namespace parbench::plots {

// Applies the scheme/model/ranks filters; UsageError when a filter names a column the file lacks.
bool keep_row(const CsvTable& t, std::size_t r, const TrainingFilter& f);

// The row's value of each field; "" for a column the file lacks (older CSVs).
Key row_key(const CsvTable& t, std::size_t r, const std::vector<KeyField>& fields);

// UsageError "FILE: no rows to plot WHAT".
[[noreturn]] void no_rows(const CsvTable& t, const std::string& what);

// The distinct non-empty values of key field `field` (the device column, for the caption).
std::vector<std::string> field_values(const std::vector<Key>& keys, std::size_t field);

// The title (--title, else `base` with the common values) over its caption line (the machine), as one gnuplot
// string.
std::string heading(const FigureOptions& o, const std::string& base, const std::string& common,
                    const std::vector<std::string>& devices);

// Renders the figure; gnuplot's warnings go to stderr.
void finish(const PlotScript& sc, const FigureOptions& o);

}  // namespace parbench::plots

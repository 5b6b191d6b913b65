// What a block prints after its footer, fed each measured row: --expect's expectation and --outliers' ranks.
#pragma once
#include <optional>

#include "expectation.h"
#include "outliers.h"

namespace parbench {

struct BlockReports {
  std::optional<ExpectedBlock> expected;  // every rank's (the CSV rows carry the expected time)
  std::optional<OutlierBlock> outliers;   // rank 0's

  // The row's expected seconds (nullopt: none).
  std::optional<double> add(const RowResult& row, bool cputime) {
    if (outliers) outliers->add(row);
    return expected ? expected->add(row, cputime) : std::nullopt;
  }
  void print() const {
    if (expected) expected->print();
    if (outliers) outliers->print();
  }
};

}  // namespace parbench

// --expect SYSTEM: the time a row should take on a described system (a predictor system: a built-in name or a
// JSON file, docs/prediction.md), from the alpha-beta cost (predict/collective_model.h) of the algorithm the row's
// implementation runs, over the row's ranks as the launch placed them on nodes; and the row's share of it.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/table/types.h"
#include "nccl_tests_output.h"
#include "predict/system.h"

namespace parbench {

// The model's algorithm for an implementation: ring, rd, rhd and their device-side forms by name, hier as
// "hierarchical", "" for the libraries (nccl, mpi, mpi-nb: the least time among the models, as a tuner picks);
// nullopt where no model matches what the implementation does (naive, tree, oneshot, ...).
std::optional<std::string> modelled_algorithm(std::string_view impl);

class Expectation {
 public:
  // UsageError naming the value and the accepted forms (load_system's).
  explicit Expectation(const std::string& system);
  const std::string& system_name() const { return sys_.name; }
  // Seconds a row of `bytes` (nccl-tests' size column) should take with `impl` over `ranks` ranks on `nodes`
  // nodes; nullopt where the model has none (the implementation's algorithm, the collective, one rank).
  std::optional<double> seconds(Collective c, std::string_view impl, double bytes, int ranks, int nodes) const;
  // What `seconds` costs for `impl` in words, for the table: "the alpha-beta model of ring", or why there is none.
  std::string basis(Collective c, std::string_view impl, int ranks, int nodes) const;

 private:
  predict::SystemModel sys_;
};

// The measured row's share of the expected: expected / measured time, in percent (= busbw / expected busbw).
inline double percent_of_expected(double expected_s, double measured_s) {
  return measured_s > 0 ? 100.0 * expected_s / measured_s : 0.0;
}

// One block's rows beside their expectation, for rank 0's table: a few lines after the block's footer.
class ExpectedBlock {
 public:
  ExpectedBlock(const Expectation& e, Collective c, std::string impl, int ranks, int nodes)
      : e_(e), coll_(c), impl_(std::move(impl)), ranks_(ranks), nodes_(nodes) {}
  // The row's expected seconds (nullopt: none), kept for print().
  std::optional<double> add(const RowResult& row, bool cputime);
  void print() const;

 private:
  struct Line {
    std::uint64_t bytes;
    std::optional<double> expected;
    double measured[2];  // seconds per half; 0 where the half did not run
  };
  const Expectation& e_;
  Collective coll_;
  std::string impl_;
  int ranks_, nodes_;
  std::vector<Line> lines_;
};

}  // namespace parbench

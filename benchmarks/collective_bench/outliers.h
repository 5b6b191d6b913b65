// --outliers: each rank's own time per row (the timed part outside the transport's waits: its reductions, copies
// and issuing, and whatever delays it) and the ranks whose own time stands apart, named after each block. A rank
// that is slow makes its peers wait, which leaves their own time alone; its own time grows. The test: a rank stands
// apart when its modified z-score (0.6745 (x - median) / MAD, Iglewicz and Hoaglin) is over 3.5, its own time is
// over twice the ranks' median, and the excess is at least a tenth of the operation's time (microseconds of a busy
// host's noise on a fast row are not a straggler). Host-driven implementations only: a library's waits are inside its
// calls.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/report.h"
#include "collectives/communicator/communicator.h"
#include "nccl_tests_output.h"

namespace parbench {

struct RankOutlier {
  int rank = 0;
  double own_s = 0, ratio = 0, z = 0;  // ratio: over the ranks' median
};

// The ranks of `own_s` (one value per rank) that stand apart, as the test above says; `op_s`: the operation's time.
std::vector<RankOutlier> own_time_outliers(const std::vector<double>& own_s, double op_s);
std::string outlier_test_text();

// A half's own times in its CSV and JSON rows: own_median_us, own_max_us, own_max_rank, outlier_ranks ("2 5");
// empty cells where the half has no own times (without --outliers, or off world rank 0).
std::vector<Cell> own_time_cells(const HalfResult& h);
// -J's "<half>_per_rank": own_us (one per rank), outlier_ranks and, with -I, times_us (each rank's iterations).
nlohmann::ordered_json own_time_json(const HalfResult& h);

// Every rank's own time, gathered to world rank 0 (the others get an empty list). Collective.
std::vector<double> gather_own_times(Communicator& world, double own_s);

// One block's rows, for rank 0's report after the block's footer.
class OutlierBlock {
 public:
  // `ranks`: the gathered rank lines (their hosts), to name each rank's node.
  OutlierBlock(const Communicator& world, const std::vector<RankInfo>& ranks);
  void add(const RowResult& row);  // each half that ran, with its rank_own
  void print() const;

 private:
  struct Line {
    std::uint64_t bytes;
    int half;
    std::vector<RankOutlier> outliers;
    double median_s;
  };
  std::vector<std::string> where_;  // "node 1 (host)" per world rank
  std::vector<Line> lines_;
  int rows_ = 0;
};

}  // namespace parbench

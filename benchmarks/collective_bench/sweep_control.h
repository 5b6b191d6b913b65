// What decides, before each row of a collective sweep, whether it runs: a stop signal (SIGINT/SIGTERM seen by
// any rank ends the sweep on every rank at the same row, so no rank waits for a collective the others left)
// and --resume (rows whose CSV keys are already in the file are skipped; only the writing rank has the file,
// so its decision is shared the same way).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "collectives/communicator/communicator.h"

namespace parbench {

// The key columns of the collective CSV: collective,impl,device,ranks,nodes,dtype,op,root,inplace,bytes.
inline constexpr std::size_t kCollectiveKeyColumns = 10;

class SweepControl {
 public:
  // `existing_rows`: the CSV's rows when resuming (empty otherwise, and on every rank but the writing one).
  explicit SweepControl(const std::vector<std::vector<std::string>>& existing_rows);

  // The key of a CSV row from its first kCollectiveKeyColumns fields.
  static std::string key(const std::vector<std::string>& fields);
  bool has(const std::string& key) const { return keys_.count(key) > 0; }

  struct Decision {
    int stop_signal = 0;  // the signal that stops the sweep here, 0 to go on
    bool skip = false;    // resume: the row is in the CSV already
  };
  // Collective over `world`: every rank passes whether it would skip (only the writer knows) and gets the same
  // decision.
  static Decision agree(Communicator& world, bool skip_mine);

 private:
  std::set<std::string> keys_;
};

}  // namespace parbench

// How a pipeline's transformer blocks are spread over its virtual stages (a GPT's embedding rides with the first,
// its head with the last): equal shares, shares that even out the stages' predicted times, or counts from a file.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "models/config.h"

namespace parbench {

// One microbatch's forward and backward through each kind of unit, in any one time unit.
struct UnitCosts {
  double embedding = 0, block = 1, head = 0;
  bool operator==(const UnitCosts&) const = default;
};

// --partition: uniform, balanced or a FILE of block counts.
struct PartitionRequest {
  enum class Kind { uniform, balanced, file };
  Kind kind = Kind::uniform;
  std::string file;
  UnitCosts costs;  // balanced: filled by the program from its cost model before the plan is made
  static PartitionRequest parse(std::string_view text);  // never fails: anything else is a file, read later
  std::string name() const;                              // "uniform", "balanced" or the file
  bool operator==(const PartitionRequest&) const = default;
};

// Blocks per virtual stage, for `layers` blocks over `stages` virtual stages of model `c`. uniform: layers / stages
// each (the caller refuses indivisible counts); balanced: each stage at least one block, placed so that the largest stage time
// (embedding on the first, head on the last) is as small as whole blocks allow; file: the file's counts, one per
// virtual stage, separated by commas or white space (UsageError naming the file and what is wrong).
std::vector<int> partition_blocks(const PartitionRequest& r, const ModelConfig& c, int stages);
std::vector<int> balanced_blocks(int layers, int stages, const UnitCosts& costs, bool with_ends);

// The units of virtual stage `vs` under `blocks`: a GPT's embedding (unit 0) with stage 0, its head with the last.
UnitRange partition_units(const ModelConfig& c, int vs, const std::vector<int>& blocks);
// "2+3+3+2", for the header and the CSV.
std::string partition_text(const std::vector<int>& blocks);

}  // namespace parbench

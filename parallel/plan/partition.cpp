// Pipeline partitions: equal, balanced by water-filling, or read from a file.
#include "parallel/plan/partition.h"

#include <fstream>
#include <numeric>
#include <sstream>

#include "base/error.h"
#include "base/text.h"

namespace parbench {

PartitionRequest PartitionRequest::parse(std::string_view text) {
  if (text == "uniform") return {};
  if (text == "balanced") return {Kind::balanced, {}, {}};
  return {Kind::file, std::string(text), {}};
}

std::string PartitionRequest::name() const {
  switch (kind) {
    case Kind::uniform: return "uniform";
    case Kind::balanced: return "balanced";
    default: return file;
  }
}

std::vector<int> balanced_blocks(int layers, int stages, const UnitCosts& costs, bool with_ends) {
  if (layers < stages)
    throw UsageError("--partition balanced needs at least one layer per virtual stage: --layers " +
                     std::to_string(layers) + " for " + std::to_string(stages) + " virtual stages");
  std::vector<int> blocks(std::size_t(stages), 1);
  std::vector<double> time(std::size_t(stages), costs.block);
  if (with_ends) time.front() += costs.embedding, time.back() += costs.head;
  // Each further block goes to the stage that is least loaded now: with equal increments this keeps the largest
  // stage time the smallest possible at every count (ties to the earlier stage).
  for (int left = layers - stages; left > 0; --left) {
    std::size_t k = 0;
    for (std::size_t s = 1; s < time.size(); ++s)
      if (time[s] < time[k]) k = s;
    ++blocks[k];
    time[k] += costs.block;
  }
  return blocks;
}

namespace {

std::vector<int> read_blocks(const std::string& path, int layers, int stages) {
  std::ifstream in(path);
  if (!in) throw UsageError("--partition: '" + path + "' is neither uniform, balanced nor a readable file");
  std::stringstream text;
  text << in.rdbuf();
  std::string content = text.str();
  for (char& ch : content)
    if (ch == ',') ch = ' ';
  std::istringstream words(content);
  std::vector<int> blocks;
  for (std::string w; words >> w;) {
    const std::optional<int> v = parse_int_text(w);
    if (!v || *v < 1)
      throw UsageError("--partition file '" + path + "': '" + w + "' is not a block count (an integer >= 1)");
    blocks.push_back(*v);
  }
  const int sum = std::accumulate(blocks.begin(), blocks.end(), 0);
  if (int(blocks.size()) != stages || sum != layers)
    throw UsageError("--partition file '" + path + "' holds " + std::to_string(blocks.size()) + " counts adding up to " +
                     std::to_string(sum) + "; this run needs " + std::to_string(stages) +
                     " (one per virtual stage: pp x virtual stages) adding up to --layers " + std::to_string(layers));
  return blocks;
}

}  // namespace

std::vector<int> partition_blocks(const PartitionRequest& r, const ModelConfig& c, int stages) {
  switch (r.kind) {
    case PartitionRequest::Kind::balanced: return balanced_blocks(c.layers, stages, r.costs, c.kind != ModelKind::mlp);
    case PartitionRequest::Kind::file: return read_blocks(r.file, c.layers, stages);
    default:
      PB_CHECK(c.layers % stages == 0, "uniform partition of " + std::to_string(c.layers) + " layers over " +
                                           std::to_string(stages) + " stages");  // refused earlier, with the options
      return std::vector<int>(std::size_t(stages), c.layers / stages);
  }
}

UnitRange partition_units(const ModelConfig& c, int vs, const std::vector<int>& blocks) {
  const int before = std::accumulate(blocks.begin(), blocks.begin() + vs, 0);
  const int mine = blocks[std::size_t(vs)];
  if (c.kind == ModelKind::mlp) return {before, before + mine};
  const int units = c.layers + 2;  // embedding, blocks, head
  return {vs == 0 ? 0 : 1 + before, vs == int(blocks.size()) - 1 ? units : 1 + before + mine};
}

std::string partition_text(const std::vector<int>& blocks) {
  std::string out;
  for (int b : blocks) out += (out.empty() ? "" : "+") + std::to_string(b);
  return out;
}

}  // namespace parbench

#include "src/schemes/pipeline/pipeline_partition.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "src/base/errors.h"
#include "src/grid/process_grid.h"

namespace mlps {

PipelinePartition::PipelinePartition(std::vector<int64_t> blocks_per_stage)
    : blocks_(std::move(blocks_per_stage)) {
  if (blocks_.empty()) throw std::logic_error("PipelinePartition: no stage");
  for (int64_t b : blocks_)
    if (b < 0 || (b == 0 && blocks_.size() > 1))
      throw std::logic_error("PipelinePartition: every stage of a pipeline needs a block");
}

// Stage s's blocks start after the embedding (unit 0) and the earlier stages' blocks.
int PipelinePartition::first_unit(int stage) const {
  if (stage == 0) return 0;
  return static_cast<int>(std::reduce(blocks_.begin(), blocks_.begin() + stage, int64_t{1}));
}

int PipelinePartition::end_unit(int stage) const {
  const auto end = std::reduce(blocks_.begin(), blocks_.begin() + stage + 1, int64_t{1});
  return static_cast<int>(stage == stages() - 1 ? end + 1 : end);  // + the classifier
}

std::string PipelinePartition::text() const {
  return dims_text(std::vector<int>(blocks_.begin(), blocks_.end()));
}

std::string PipelinePartition::unit_names(int stage) const {
  const int64_t first = std::max(first_unit(stage) - 1, 0), count = blocks_[stage];
  std::string out = stage == 0 ? "embed" : "";
  const auto add = [&](const std::string& name) { out += (out.empty() ? "" : ",") + name; };
  if (count > 0)
    add("block" + std::to_string(first) +
        (count > 1 ? ".." + std::to_string(first + count - 1) : std::string()));
  if (stage == stages() - 1) add("classifier");
  return out;
}

namespace {

void check_stage_count(const ModelConfig& config, int stages) {
  if (stages > std::max<int64_t>(config.layers, 1))
    throw InputError("--pp " + std::to_string(stages) + " exceeds the " +
                     std::to_string(config.layers) + " blocks of the model (--layers " +
                     std::to_string(config.layers) +
                     "): every pipeline stage needs at least one block");
}

}  // namespace

PipelinePartition balanced_partition(const ModelConfig& config, int stages) {
  check_stage_count(config, stages);
  const int64_t blocks = config.layers;
  if (stages == 1) return PipelinePartition({blocks});
  const std::vector<int64_t> units = unit_parameter_counts(config);
  const int64_t block_cost = units[1];
  const int64_t last = stages - 1;
  // Cost of stage s holding n blocks.
  auto cost = [&](int64_t s, int64_t n) {
    return n * block_cost + (s == 0 ? units.front() : 0) + (s == last ? units.back() : 0);
  };
  // best[s][k]: the smallest possible largest cost of stages s..P−1 holding blocks k..L−1.
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> best(stages, std::vector<int64_t>(blocks + 1, kNone));
  for (int64_t k = 0; k < blocks; ++k) best[last][k] = cost(last, blocks - k);
  for (int64_t s = last - 1; s >= 0; --s)
    for (int64_t k = 0; k < blocks; ++k)
      for (int64_t n = 1; k + n < blocks; ++n)
        if (best[s + 1][k + n] != kNone)
          best[s][k] = std::min(best[s][k], std::max(cost(s, n), best[s + 1][k + n]));
  // Greedy from the first stage: the fewest blocks that still allow the optimum.
  const int64_t optimum = best[0][0];
  std::vector<int64_t> split;
  int64_t k = 0;
  for (int64_t s = 0; s < last; ++s) {
    int64_t n = 1;
    while (cost(s, n) > optimum || best[s + 1][k + n] > optimum) ++n;
    split.push_back(n);
    k += n;
  }
  split.push_back(blocks - k);
  return PipelinePartition(split);
}

std::vector<int64_t> partition_blocks(const std::string& text) {
  std::vector<int64_t> split;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value < 1)
      throw InputError("--partition '" + text + "': '" + item +
                       "' is not a positive number of blocks");
    split.push_back(value);
    if (comma == std::string::npos) return split;
    start = comma + 1;
  }
}

PipelinePartition parse_partition(const std::string& text, const ModelConfig& config,
                                  int stages) {
  check_stage_count(config, stages);
  const std::string option = "--partition '" + text + "'";
  const std::vector<int64_t> split = partition_blocks(text);
  if (static_cast<int>(split.size()) != stages)
    throw InputError(option + " gives " + std::to_string(split.size()) +
                     " stages, but the pipeline has " + std::to_string(stages) +
                     " (--pp, times the chunks per rank of interleaved and zb-v)");
  int64_t total = 0;
  for (int64_t b : split) total += b;
  if (total != config.layers)
    throw InputError(option + " sums to " + std::to_string(total) + " blocks, but the model has " +
                     std::to_string(config.layers) + " (--layers " +
                     std::to_string(config.layers) + ")");
  return PipelinePartition(split);
}

}  // namespace mlps

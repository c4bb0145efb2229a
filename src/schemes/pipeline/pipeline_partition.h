#pragma once
// Which of FC_Net's units each pipeline stage holds. Units are FcNet's, in forward order:
// 0 the embedding, 1..L the blocks, L+1 the classifier. Stage s holds a contiguous run of them;
// the embedding always goes with the first stage's blocks and the classifier with the last
// stage's, so a partition is just the number of blocks per stage (every stage at least one).
#include <cstdint>
#include <string>
#include <vector>

#include "src/model/model_config.h"

namespace mlps {

class PipelinePartition {
 public:
  // blocks_per_stage[s] blocks on stage s (one stage may hold no block only when it is alone).
  explicit PipelinePartition(std::vector<int64_t> blocks_per_stage);

  int stages() const { return static_cast<int>(blocks_.size()); }
  int64_t blocks(int stage) const { return blocks_[stage]; }
  // FcNet units [first_unit, end_unit) of a stage.
  int first_unit(int stage) const;
  int end_unit(int stage) const;
  // "1,2,1": what --partition would take to give this partition.
  std::string text() const;
  // The units of a stage, e.g. "embed,block0..1" or "block3,classifier".
  std::string unit_names(int stage) const;

 private:
  std::vector<int64_t> blocks_;
};

// The contiguous split of the blocks over `stages` stages (embed on the first, classifier on
// the last) that minimises the largest stage's parameter count; among equal splits, the one
// with the lightest early stages (which hold the most micro-batches in flight under 1F1B).
// InputError when there are more stages than blocks.
PipelinePartition balanced_partition(const ModelConfig& config, int stages);

// The blocks per stage that --partition "1,2,1" lists; InputError unless each is a positive
// integer.
std::vector<int64_t> partition_blocks(const std::string& text);

// --partition "1,2,1": blocks per stage. InputError (one line naming the value) unless it is
// `stages` positive integers summing to the model's blocks.
PipelinePartition parse_partition(const std::string& text, const ModelConfig& config, int stages);

}  // namespace mlps

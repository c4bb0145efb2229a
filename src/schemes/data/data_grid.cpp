#include "src/schemes/data/data_grid.h"

#include "src/base/errors.h"

namespace mlps {

void check_shard_group_stage(const DataGrid& config) {
  if (config.shard_group > 0 && config.zero != 3)
    throw InputError("--shard-group " + std::to_string(config.shard_group) + " needs --zero 3 "
                     "(hybrid sharding of parameters, gradients and optimizer state), not "
                     "--zero " + std::to_string(config.zero));
}

void resolve_shard_group(DataGrid& config, int ranks) {
  const int group = config.shard_group;
  if (group == 0) {
    config.shard_group = ranks;
    return;
  }
  check_shard_group_stage(config);
  if (ranks % group != 0)
    throw InputError("--shard-group " + std::to_string(group) + " does not divide the " +
                     std::to_string(ranks) + " ranks into groups of consecutive ranks");
}

std::string data_grid_text(int ranks, const DataGrid& config) {
  std::string text = "dp=" + std::to_string(ranks) + ",zero=" + std::to_string(config.zero);
  if (config.shard_group > 0 && config.shard_group < ranks)
    text += ",shard-group=" + std::to_string(config.shard_group);
  return text;
}

void check_batch_covers_ranks(int64_t global_batch, int ranks) {
  if (global_batch < ranks)
    throw InputError("--batch " + std::to_string(global_batch) + " leaves some of the " +
                     std::to_string(ranks) + " data-parallel ranks without samples");
}

}  // namespace mlps

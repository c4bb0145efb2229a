#include "src/schemes/data/data_grid.h"

#include <sys/stat.h>
#include <unistd.h>

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
  if (config.offload == OffloadTier::host) text += ",offload=host";
  if (config.offload == OffloadTier::disk) text += ",offload=disk";
  if (config.offload != OffloadTier::none && config.offload_params) text += "+params";
  return text;
}

void resolve_offload(DataGrid& config, const std::string& offload, const std::string& offload_to,
                     bool cpu_device) {
  config.offload = OffloadTier::none;
  config.offload_params = false;
  config.offload_dir.clear();
  if (offload.empty() || offload == "none") {
    if (!offload_to.empty())
      throw InputError("--offload-to " + offload_to + " needs --offload optimizer");
    return;
  }
  if (config.zero == 0)
    throw InputError("--offload " + offload + " needs --zero 1, 2 or 3 (ZeRO-Offload moves "
                     "the optimizer state each rank owns): not --zero 0");
  config.offload_params = offload == "optimizer+params";
  if (config.offload_params && config.zero != 3)
    throw InputError("--offload optimizer+params needs --zero 3: ZeRO " +
                     std::to_string(config.zero) + " keeps every parameter on every rank, "
                     "there is no shard of them to offload");
  if (offload_to.empty() || offload_to == "host") {
    if (cpu_device)
      throw InputError("--offload " + offload + " on the CPU backend needs --offload-to "
                       "disk:DIR (its state is in host memory already)");
    config.offload = OffloadTier::host;
    return;
  }
  if (offload_to.rfind("disk:", 0) != 0 || offload_to.size() == 5)
    throw InputError("--offload-to " + offload_to + ": expected host or disk:DIR");
  const std::string dir = offload_to.substr(5);
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw InputError("--offload-to disk:" + dir + ": no such directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError("--offload-to disk:" + dir + ": not writable");
  config.offload = OffloadTier::disk;
  config.offload_dir = dir;
}

void check_batch_covers_ranks(int64_t global_batch, int ranks) {
  if (global_batch < ranks)
    throw InputError("--batch " + std::to_string(global_batch) + " leaves some of the " +
                     std::to_string(ranks) + " data-parallel ranks without samples");
}

}  // namespace mlps

#pragma once
// bin/data's resolved grid: the ZeRO stage, its buckets and overlap, ZeRO-3's shard groups over
// the N data-parallel ranks, and where the optimizer's state lives (--offload), with the rules
// that resolve and check them.
#include <cstdint>
#include <string>

namespace mlps {

// Where --offload optimizer keeps the state: nowhere else (none), in host memory (a GPU's
// run), or in a scratch file per rank.
enum class OffloadTier { none, host, disk };

struct DataGrid {
  int zero = 0;
  double bucket_mb = 25;
  bool overlap = true;
  int shard_group = 0;  // G, ranks sharing one sharded copy of the model (0: all of them)
  OffloadTier offload = OffloadTier::none;
  // --offload optimizer+params (ZeRO-3's ZeRO-Infinity): the parameter shard offloaded too
  bool offload_params = false;
  std::string offload_dir;  // --offload-to disk:DIR: the folder of each rank's scratch file
};

// --offload and --offload-to as given (each empty when absent), checked for the device and the
// ZeRO stage and resolved into config.offload, offload_params and offload_dir (host when a GPU's
// run names no tier); InputError naming what is wrong.
void resolve_offload(DataGrid& config, const std::string& offload, const std::string& offload_to,
                     bool cpu_device);

// InputError unless each of `ranks` data-parallel ranks gets at least one row.
void check_batch_covers_ranks(int64_t global_batch, int ranks);
// InputError for --shard-group without --zero 3 (an error in the flags, whatever the ranks).
void check_shard_group_stage(const DataGrid& config);
// InputError unless --shard-group (if given) is a divisor of `ranks` with --zero 3; sets an
// absent one to `ranks` (one group: plain ZeRO).
void resolve_shard_group(DataGrid& config, int ranks);
// The grid as results and --check-grid show it: "dp=4,zero=3", ",shard-group=2" when G < N,
// ",offload=host" or ",offload=disk" with offloaded optimizer state (",offload=host+params",
// ",offload=disk+params" with the parameters too).
std::string data_grid_text(int ranks, const DataGrid& config);

}  // namespace mlps

// bin/data: data parallelism. DDP (bucketed gradient all-reduce overlapped with backward) and
// ZeRO stages 1-3 over --dp ranks, each training on its rows of the global batch; ZeRO-3 may
// shard within groups of --shard-group ranks and replicate across the groups (hybrid sharding).
#include <memory>

#include "src/cli_validators.h"
#include "src/comm/comm_volume_report.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/memory/scheme_memory.h"
#include "src/schemes/data/data_parallel_trainer.h"
#include "src/schemes/data/fully_sharded_trainer.h"

int main(int argc, char** argv) {
  using namespace mlps;
  int dp = 0;
  bool no_overlap = false;
  DataParallelConfig config;
  SchemeDefinition scheme;
  scheme.name = "data";
  scheme.description = "Data parallelism: DDP with bucketed, overlapped gradient all-reduce "
                       "(--zero 0) and ZeRO stages 1, 2 and 3 (FSDP).";
  scheme.add_options = [&](CLI::App& app) {
    app.add_option("--dp", dp, "data-parallel ranks (default: all ranks; must equal the world "
                   "size)")->check(CLI::Range(1, 1 << 20));
    app.add_option("--zero", config.zero, "0: DDP; 1: optimizer state sharded; 2: gradients "
                   "sharded too; 3: parameters sharded (FSDP)")->check(CLI::Range(0, 3));
    app.add_option("--bucket-mb", config.bucket_mb, "gradient bucket size in MiB (the first "
                   "bucket is 1 MiB, as in PyTorch)")->check(positive_real());
    app.add_option("--shard-group", config.shard_group, "--zero 3 only: shard within groups of "
                   "G consecutive ranks and replicate across the N/G groups (hybrid sharding; "
                   "default: one group of all ranks)")->check(CLI::Range(1, 1 << 20));
    app.add_flag("--no-overlap", no_overlap, "start gradient communication only after the "
                 "whole backward pass (for comparison)");
  };
  scheme.check_options = [&](const Options&) { check_shard_group_stage(config); };
  scheme.check_grid = [&](const Options& o, int ranks) {
    config.overlap = !no_overlap;
    if (dp != 0 && dp != ranks)
      throw InputError("--dp " + std::to_string(dp) + " does not match the " +
                       std::to_string(ranks) + " ranks (data parallelism uses all of them)");
    check_batch_covers_ranks(o.batch, ranks);
    resolve_shard_group(config, ranks);
    return data_grid_text(ranks, config);
  };
  scheme.describe = [&](PlanCandidate& c) {
    c.data = config;
    c.replicas = c.world;
  };
  scheme.memory = [&](const Options& o, int, int ranks) { return data_memory(o, ranks, config); };
  scheme.train = [&](SchemeStart& s) {
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) -> std::unique_ptr<DataParallelBase<decltype(zero)>> {
          using T = decltype(zero);
          if (config.zero == 3) return std::make_unique<FullyShardedTrainer<T>>(s.setup(), config);
          return std::make_unique<DataParallelTrainer<T>>(s.setup(), config);
        },
        [&](const auto& trainer) {
          // Every rank moves the same bytes: rank 0's table stands for all.
          if (!s.context.is_root()) return;
          CommCalls calls;
          const auto bytes = trainer.analytic_bytes(s.options.inference, &calls);
          print_comm_volumes(stdout, "rank 0", bytes, trainer.measured_volumes(), &calls);
        });
  };
  return scheme_main(argc, argv, scheme);
}

// bin/data: data parallelism. DDP (bucketed gradient all-reduce overlapped with backward) and
// ZeRO stages 1-3 over --dp ranks, each training on its rows of the global batch.
#include <cstdio>
#include <memory>

#include "src/cli_validators.h"
#include "src/comm/make_communicator.h"
#include "src/data/dataset.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/mpi_session.h"
#include "src/results/run_info.h"
#include "src/schemes/data_parallel_trainer.h"
#include "src/schemes/fully_sharded_trainer.h"

namespace mlps {
namespace {

template <typename T>
std::unique_ptr<Trainer> make_trainer(DeviceKind device, const Options& o,
                                      const DataParallelConfig& config, CommBackend backend) {
  if (config.zero == 3)
    return std::make_unique<FullyShardedTrainer<T>>(device, o.model, o.optimizer, o.seed, o.batch,
                                                    config, backend, MPI_COMM_WORLD);
  return std::make_unique<DataParallelTrainer<T>>(device, o.model, o.optimizer, o.seed, o.batch,
                                                  config, backend, MPI_COMM_WORLD);
}

int run(const MpiSession& mpi, int argc, char** argv) {
  OptionParser parser("data", "Data parallelism: DDP with bucketed, overlapped gradient "
                      "all-reduce (--zero 0) and ZeRO stages 1, 2 and 3 (FSDP).");
  int dp = 0;
  DataParallelConfig config;
  bool no_overlap = false;
  auto& app = parser.app();
  app.add_option("--dp", dp, "data-parallel ranks (default: all ranks; must equal the world size)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--zero", config.zero, "0: DDP; 1: optimizer state sharded; 2: gradients "
                 "sharded too; 3: parameters sharded (FSDP)")->check(CLI::Range(0, 3));
  app.add_option("--bucket-mb", config.bucket_mb, "gradient bucket size in MiB (the first "
                 "bucket is 1 MiB, as in PyTorch)")->check(positive_real());
  app.add_flag("--no-overlap", no_overlap, "start gradient communication only after the whole "
               "backward pass (for comparison)");
  if (!parser.parse(argc, argv)) {
    if (mpi.rank() == 0) std::printf("%s", parser.help_text().c_str());
    return 0;
  }
  config.overlap = !no_overlap;
  const Options& o = parser.options();
  check_launch_matches_slurm(mpi.size());
  if (dp != 0 && dp != mpi.size())
    throw InputError("--dp " + std::to_string(dp) + " does not match the " +
                     std::to_string(mpi.size()) + " ranks (data parallelism uses all of them)");
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  const DeviceKind device = resolve_device(o.device);
  bind_gpu(placement, device);
  const CommBackend backend = resolve_comm_backend(o.comm, device, placement, MPI_COMM_WORLD);
  const auto dataset = open_dataset(o.data, o.seed);
  const auto schedule = TrainingSchedule::make(o, dataset->size(Split::train));
  const auto trainer = o.precision == Precision::fp64
                           ? make_trainer<double>(device, o, config, backend)
                           : make_trainer<float>(device, o, config, backend);
  RunContext context{"data", command_line(argc, argv), MPI_COMM_WORLD, mpi.rank(), mpi.size()};
  return run_training(context, o, schedule, *trainer, *dataset);
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("data", [&] { return mlps::run(mpi, argc, argv); });
}

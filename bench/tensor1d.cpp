// bin/tensor1d: Megatron-LM tensor parallelism (column-parallel then row-parallel Linear, one
// all-reduce per pair in each direction) over --tp ranks, × --dp data-parallel replicas.
#include <cstdio>
#include <memory>

#include "src/comm/make_communicator.h"
#include "src/data/dataset.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/mpi_session.h"
#include "src/results/run_info.h"
#include "src/driver/comm_volume_report.h"
#include "src/schemes/tensor1d/tensor1d_trainer.h"

namespace mlps {
namespace {

// --tp × --dp must be the world size; a missing one is the world size over the other.
void resolve_grid(int world, int& tp, int& dp) {
  const std::string ranks = " the " + std::to_string(world) + " ranks";
  if (tp == 0 && dp == 0) tp = world;
  if (tp == 0) {
    if (world % dp != 0) throw InputError("--dp " + std::to_string(dp) + " does not divide" + ranks);
    tp = world / dp;
  }
  if (dp == 0) {
    if (world % tp != 0) throw InputError("--tp " + std::to_string(tp) + " does not divide" + ranks);
    dp = world / tp;
  }
  if (static_cast<int64_t>(tp) * dp != world)
    throw InputError("--tp " + std::to_string(tp) + " x --dp " + std::to_string(dp) + " = " +
                     std::to_string(static_cast<int64_t>(tp) * dp) + " does not match" + ranks);
}

template <typename T>
int train(const RunContext& context, const Options& o, const TrainingSchedule& schedule,
          const Tensor1dPlan& plan, int dp, CommBackend backend, DeviceKind device,
          const Dataset& dataset) {
  Tensor1dTrainer<T> trainer(device, plan, o.optimizer, o.seed, o.batch, dp, backend,
                             MPI_COMM_WORLD);
  const int code = run_training(context, o, schedule, trainer, dataset);
  if (!context.is_root()) return code;
  // With --inference the measured volumes are the forward passes' (and no weights are gathered,
  // so there is no replicated-tensor comparison).
  print_comm_volumes(stdout, "rank 0", trainer.analytic_bytes(schedule.global_batch, o.inference),
                     trainer.measured_bytes());
  if (o.verify && plan.tp > 1 && !o.inference) {
    if (trainer.most_divergent_tensor().empty())
      std::printf("replicated tensors: identical on all %d tp ranks\n", plan.tp);
    else
      std::printf("replicated tensors: differ between tp ranks, by up to %.3e (%s)\n",
                  trainer.replica_divergence(), trainer.most_divergent_tensor().c_str());
  }
  return code;
}

int run(const MpiSession& mpi, int argc, char** argv) {
  OptionParser parser("tensor1d", "Megatron-LM tensor parallelism: column-parallel then "
                      "row-parallel Linear in every block, x data-parallel replicas.");
  int tp = 0;
  int dp = 0;
  auto& app = parser.app();
  app.add_option("--tp", tp, "tensor-parallel ranks per replica (default: the ranks over --dp)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--dp", dp, "data-parallel replicas (default: the ranks over --tp); rank = "
                 "replica x tp + tp rank")->check(CLI::Range(1, 1 << 20));
  if (!parser.parse(argc, argv)) {
    if (mpi.rank() == 0) std::printf("%s", parser.help_text().c_str());
    return 0;
  }
  const Options& o = parser.options();
  check_launch_matches_slurm(mpi.size());
  resolve_grid(mpi.size(), tp, dp);
  if (o.batch < dp)
    throw InputError("--batch " + std::to_string(o.batch) + " leaves some of the " +
                     std::to_string(dp) + " data-parallel replicas without samples");
  const Tensor1dPlan plan = make_tensor1d_plan(o.model, tp);
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  const DeviceKind device = resolve_device(o.device);
  bind_gpu(placement, device);
  const CommBackend backend = resolve_comm_backend(o.comm, device, placement, MPI_COMM_WORLD);
  const auto dataset = open_dataset(o.data, o.seed);
  const auto schedule = TrainingSchedule::make(o, dataset->size(Split::train));
  RunContext context{"tensor1d", command_line(argc, argv), MPI_COMM_WORLD, mpi.rank(), mpi.size()};
  return o.precision == Precision::fp64
             ? train<double>(context, o, schedule, plan, dp, backend, device, *dataset)
             : train<float>(context, o, schedule, plan, dp, backend, device, *dataset);
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("tensor1d", [&] { return mlps::run(mpi, argc, argv); });
}

// bin/tensor2d: 2D tensor parallelism (SUMMA / Optimus): every Linear a SUMMA product on a
// q × q grid with broadcasts along grid rows and columns, LayerNorm statistics reduced over the
// grid row; optionally × --dp data-parallel replicas. At the end rank 0 prints each collective's
// analytic bytes per rank and iteration beside the measured ones, and the memory per rank.
#include <cstdio>
#include <memory>

#include "src/cli_validators.h"
#include "src/data/dataset.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/mpi_session.h"
#include "src/results/run_info.h"
#include "src/schemes/tensor2d/tensor2d_trainer.h"
#include "src/schemes/tensor2d/volumes_2d.h"

namespace mlps {
namespace {

template <typename T>
void print_report(const Tensor2dTrainer<T>& trainer, const Options& o, const GridShape& shape) {
  // With --inference the measured volumes are one forward pass's per batch. bf16/fp16 runs
  // carry every payload in 16 bits, but the "data" group's in fp32 with --fp32-grad-comm.
  const bool narrow = storage_format(o.precision) != StorageFormat::full;
  const size_t wire = narrow ? 2 : sizeof(T);
  auto volumes = tensor2d_volumes(o.model, o.batch, shape, wire, {}, o.inference);
  if (narrow && o.fp32_grad_comm && volumes.count("allreduce:data"))
    volumes["allreduce:data"] =
        tensor2d_volumes(o.model, o.batch, shape, sizeof(float), {}, o.inference)
            .at("allreduce:data");
  print_comm_volumes(stdout, "rank 0", volumes, trainer.measured_bytes());
  const double q2 = static_cast<double>(shape.q) * shape.q;
  std::printf("memory per rank: parameter shards %lld B (weight blocks %lld B, about 1/%g of "
              "the weights), with gradients and optimizer state %lld B; peak %zu B\n",
              (long long)trainer.parameter_bytes(), (long long)trainer.weight_bytes(), q2,
              (long long)trainer.state_bytes(), trainer.device().peak_bytes());
}

template <typename T>
int train(const MpiSession& mpi, const RunContext& context, const Options& o,
          const GridShape& shape, DeviceKind device, CommBackend backend) {
  const auto dataset = open_dataset(o.data, o.seed);
  const auto schedule = TrainingSchedule::make(o, dataset->size(Split::train));
  Tensor2dTrainer<T> trainer(device, o.model, o.optimizer, o.seed, o.batch, shape, backend,
                             MPI_COMM_WORLD);
  const int status = run_training(context, o, schedule, trainer, *dataset);
  if (mpi.rank() == 0) print_report(trainer, o, shape);
  return status;
}

int run(const MpiSession& mpi, int argc, char** argv) {
  OptionParser parser("tensor2d", "2D tensor parallelism (SUMMA): every Linear a SUMMA product "
                      "on a q x q grid, optionally x --dp data-parallel replicas.");
  std::string tp_dims;
  int dp = 0;
  auto& app = parser.app();
  app.add_option("--tp-dims", tp_dims, "the q,q grid (square; default: the square root of the "
                 "ranks per replica)")
      ->check(non_empty());
  app.add_option("--dp", dp, "data-parallel replicas of the grid (default: ranks / q²)")
      ->check(CLI::Range(1, 1 << 20));
  if (!parser.parse(argc, argv)) {
    if (mpi.rank() == 0) std::printf("%s", parser.help_text().c_str());
    return 0;
  }
  const Options& o = parser.options();
  check_launch_matches_slurm(mpi.size());
  const GridShape shape = resolve_grid_shape(tp_dims, dp, mpi.size());
  check_grid_fits(o.model, o.batch, shape);
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  const DeviceKind device = resolve_device(o.device);
  bind_gpu(placement, device);
  const CommBackend backend = resolve_comm_backend(o.comm, device, placement, MPI_COMM_WORLD);
  RunContext context{"tensor2d", command_line(argc, argv), MPI_COMM_WORLD, mpi.rank(),
                     mpi.size()};
  return o.precision == Precision::fp64
             ? train<double>(mpi, context, o, shape, device, backend)
             : train<float>(mpi, context, o, shape, device, backend);
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("tensor2d", [&] { return mlps::run(mpi, argc, argv); });
}

// bin/pipeline: pipeline (inter-layer) parallelism, GPipe or 1F1B over micro-batches, optionally
// × data parallelism (--pp P × --dp D = ranks, rank = d·P + s).
#include <cstdio>
#include <memory>

#include "src/cli_validators.h"
#include "src/comm/make_communicator.h"
#include "src/data/dataset.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/mpi_session.h"
#include "src/results/run_info.h"
#include "src/schemes/pipeline_trainer.h"

namespace mlps {
namespace {

template <typename T>
int train(const RunContext& context, const Options& o, const TrainingSchedule& schedule,
          const Dataset& dataset, const PipelineLayout& layout, DeviceKind device,
          CommBackend backend) {
  PipelineTrainer<T> trainer(device, o.model, o.optimizer, o.seed, o.batch, layout, backend,
                             MPI_COMM_WORLD);
  const int exit_code = run_training(context, o, schedule, trainer, dataset);
  // With --inference the figures are those of the forward-only stream (evaluate()).
  print_pipeline_report(layout, trainer.batch_slice(o.batch).count / layout.micro_batches,
                        trainer.report(o.warmup, o.inference), MPI_COMM_WORLD, o.inference);
  return exit_code;
}

int run(const MpiSession& mpi, int argc, char** argv) {
  OptionParser parser("pipeline", "Pipeline (inter-layer) parallelism: each of --pp stages holds "
                      "a contiguous run of the model's units (embed and the first blocks on stage "
                      "0, the last blocks and the classifier on the last stage); micro-batches "
                      "flow through them under the GPipe or 1F1B schedule; --dp pipeline replicas "
                      "all-reduce their gradients stage by stage. Rank = replica x pp + stage.");
  PipelineOptions p;
  auto& app = parser.app();
  app.add_option("--pp", p.pp, "pipeline stages P (0: the ranks / --dp); P x D must equal the "
                 "ranks, and P may not exceed the blocks (--layers)")
      ->check(integer_between(0, 1 << 20));
  app.add_option("--dp", p.dp, "pipeline replicas D (0: the ranks / --pp, or 1 when --pp is 0 "
                 "too); replica d trains on rows [d*B/D, (d+1)*B/D) of the global batch B")
      ->check(integer_between(0, 1 << 20));
  app.add_option("--micro-batches", p.micro_batches, "micro-batches M per replica and step; M "
                 "must divide the replica's rows (--batch / D)")
      ->check(integer_between(1, 1 << 20));
  app.add_option("--schedule", p.schedule, "gpipe: all forwards, then all backwards (M "
                 "micro-batches of activations per stage); 1f1b: PipeDream-Flush, P-s-1 warm-up "
                 "forwards on stage s, then one forward one backward (at most P-s in flight)")
      ->check(CLI::IsMember({"gpipe", "1f1b"}));
  app.add_option("--partition", p.partition, "blocks per stage, comma-separated, e.g. 1,2,1 for 4 "
                 "blocks on 3 stages: stage 0 also holds the embedding and the last stage the "
                 "classifier; every stage at least one block, the sum = --layers (default: the "
                 "contiguous split minimising the largest stage's parameter count)");
  if (!parser.parse(argc, argv)) {
    if (mpi.rank() == 0) std::printf("%s", parser.help_text().c_str());
    return 0;
  }
  const Options& o = parser.options();
  check_launch_matches_slurm(mpi.size());
  const PipelineLayout layout = resolve_pipeline_layout(p, o.model, o.batch, mpi.size());
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  const DeviceKind device = resolve_device(o.device);
  bind_gpu(placement, device);
  const CommBackend backend = resolve_comm_backend(o.comm, device, placement, MPI_COMM_WORLD);
  const auto dataset = open_dataset(o.data, o.seed);
  const auto schedule = TrainingSchedule::make(o, dataset->size(Split::train));
  RunContext context{"pipeline", command_line(argc, argv), MPI_COMM_WORLD, mpi.rank(), mpi.size()};
  if (o.precision == Precision::fp64)
    return train<double>(context, o, schedule, *dataset, layout, device, backend);
  return train<float>(context, o, schedule, *dataset, layout, device, backend);
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("pipeline", [&] { return mlps::run(mpi, argc, argv); });
}

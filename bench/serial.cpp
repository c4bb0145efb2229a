// bin/serial: the whole model on one process, the reference every scheme is checked against.
#include <cstdio>
#include <memory>

#include "src/data/dataset.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/mpi_session.h"
#include "src/results/run_info.h"
#include "src/schemes/serial_trainer.h"

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("serial", [&] {
    mlps::OptionParser parser("serial", "Train the tutorial's FC_Net serially on one process "
                              "(the reference for every parallel scheme).");
    if (!parser.parse(argc, argv)) {
      if (mpi.rank() == 0) std::printf("%s", parser.help_text().c_str());
      return 0;
    }
    const mlps::Options& o = parser.options();
    if (mpi.size() != 1)
      throw mlps::InputError("bin/serial runs on exactly one rank, not " +
                             std::to_string(mpi.size()) + " (use bin/data for several)");
    const mlps::DeviceKind device = mlps::resolve_device(o.device);
    const auto dataset = mlps::open_dataset(o.data, o.seed);
    const auto schedule = mlps::TrainingSchedule::make(o, dataset->size(mlps::Split::train));
    std::unique_ptr<mlps::Trainer> trainer;
    if (o.precision == mlps::Precision::fp64)
      trainer = std::make_unique<mlps::SerialTrainer<double>>(device, o.model, o.optimizer, o.seed,
                                                              o.batch);
    else
      trainer = std::make_unique<mlps::SerialTrainer<float>>(device, o.model, o.optimizer, o.seed,
                                                             o.batch);
    mlps::RunContext context{"serial", mlps::command_line(argc, argv), MPI_COMM_WORLD, mpi.rank(),
                             mpi.size()};
    return mlps::run_training(context, o, schedule, *trainer, *dataset);
  });
}

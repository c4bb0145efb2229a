#pragma once
// The start-up every training executable shares, in one place: MPI and the exit codes, the
// options (--help, --check-grid), the Slurm launch check, the scheme's grid resolved for the
// world size, placement, device and GPU binding, the collectives backend, the memory check, the
// dataset and the schedule. A scheme supplies its flags, its grid rules, its memory accounting
// and how it trains (building its trainer in the run's precision).
#include <functional>
#include <memory>
#include <string>

#include "kernels/half_types.h"
#include "src/comm/make_communicator.h"
#include "src/comm/process_placement.h"
#include "src/data/dataset.h"
#include "src/driver/run_context.h"
#include "src/driver/training_driver.h"
#include "src/driver/training_schedule.h"
#include "src/memory/memory_need.h"
#include "src/options.h"
#include "src/plan/plan_candidates.h"
#include "src/schemes/scheme_trainer.h"

namespace mlps {

// What scheme_main has resolved when the scheme's train() is called.
struct SchemeStart {
  const Options& options;
  RunContext context;
  RankPlacement placement{};
  DeviceConfig device{DeviceKind::cpu};  // backend, storage format, gradient wire
  CommBackend backend = CommBackend::mpi;
  std::unique_ptr<Dataset> dataset{};
  TrainingSchedule schedule{};

  // The options' model, optimizer, seed and batch on this device and backend, over the world.
  TrainerSetup setup() const {
    return {device, options.model, options.optimizer, options.seed, options.batch, backend,
            MPI_COMM_WORLD};
  }
};

// Trains the trainer that make(T{}) builds (a unique_ptr) in the run's precision (T = double
// for fp64, else float: bf16 and fp16 emulated), then calls report(trainer) on every rank;
// returns the exit code. With Typed16bit, bf16 and fp16 runs build T = bf16 or fp16: typed
// storage (kernels/half_types.h), for the schemes that have it.
template <bool Typed16bit = false, typename Make, typename Report = void (*)(const Trainer&)>
int train_in_precision(SchemeStart& s, Make make, Report report = [](const Trainer&) {}) {
  const auto run = [&](auto zero) {
    const auto trainer = make(zero);
    const int status = run_training(s.context, s.options, s.schedule, *trainer, *s.dataset);
    report(*trainer);
    return status;
  };
  if constexpr (Typed16bit) {
    if (s.options.precision == Precision::bf16) return run(bf16{});
    if (s.options.precision == Precision::fp16) return run(fp16{});
  }
  return s.options.precision == Precision::fp64 ? run(0.0) : run(0.0f);
}

struct SchemeDefinition {
  std::string name;         // "data": the program name in messages and results
  std::string description;  // the first line of --help
  // Adds the scheme's flags to the shared table (bound to the caller's variables).
  std::function<void(CLI::App&)> add_options = [](CLI::App&) {};
  // Refuses (InputError) what is wrong in the flags themselves, whatever the ranks, batch and
  // model: --check-grid answers those with status 2, a grid that does not fit with 3.
  std::function<void(const Options&)> check_options = [](const Options&) {};
  // Resolves the grid for `ranks` ranks and checks that the model and batch fit it: an
  // InputError naming the problem, else the grid as --check-grid prints it. Called first, so
  // memory() and train() may use what it resolved.
  std::function<std::string(const Options&, int ranks)> check_grid;
  // Sets the grid check_grid resolved in the candidate the run's own prediction is made for
  // (src/plan/run_prediction.h); serial has none.
  std::function<void(PlanCandidate&)> describe = [](PlanCandidate&) {};
  // What world rank `rank` of `ranks` will hold at its peak (src/memory/scheme_memory.h).
  std::function<MemoryNeed(const Options&, int rank, int ranks)> memory;
  // Builds the trainer and trains; returns the exit code.
  std::function<int(SchemeStart&)> train;
};

// main() of a training executable.
int scheme_main(int argc, char** argv, const SchemeDefinition& scheme);

}  // namespace mlps

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
#include "src/options/options.h"
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

// One scheme: everything its executable and bin/plan know of it. Each folder
// src/schemes/<scheme>/ implements one in <scheme>_scheme.cpp (its flags are its members), and
// src/schemes/scheme_registry.cpp lists them all.
class Scheme {
 public:
  // name: "data" for the executable bin/data, and the program name in messages and results;
  // description: the first line of its --help.
  Scheme(std::string name, std::string description)
      : name_(std::move(name)), description_(std::move(description)) {}
  virtual ~Scheme() = default;
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  // Adds the scheme's flags to the shared table (bound to the scheme's members).
  virtual void add_options(CLI::App&) {}
  // Refuses (InputError) what is wrong in the flags themselves, whatever the ranks, batch and
  // model: --check-grid answers those with status 2, a grid that does not fit with 3.
  virtual void check_options(const Options&) {}
  // Resolves the grid for `ranks` ranks and checks that the model and batch fit it: an
  // InputError naming the problem, else the grid as --check-grid prints it. Called first, so
  // the functions below may use what it resolved.
  virtual std::string check_grid(const Options& o, int ranks) = 0;
  // Sets the resolved grid, and the accounting of its ranks' work, in the candidate the run's
  // own prediction is made for (src/plan/run_prediction.h).
  virtual void describe(PlanCandidate& c) const = 0;
  // bin/plan's candidates for base.world ranks: copies of `base` (its model, batch, precision)
  // with each grid the scheme accepts.
  virtual void add_candidates(std::vector<PlanCandidate>& out,
                              const PlanCandidate& base) const = 0;
  // What world rank `rank` of `ranks` will hold at its peak (<scheme>_memory.h).
  virtual MemoryNeed memory(const Options& o, int rank, int ranks) const = 0;
  // Builds the trainer and trains; returns the exit code.
  virtual int train(SchemeStart& s) = 0;

 private:
  std::string name_, description_;
};

// main() of a training executable.
int scheme_main(int argc, char** argv, Scheme& scheme);

}  // namespace mlps

#pragma once
// bin/plan's candidates: one scheme's configuration of a model on some ranks, as the scheme
// resolved and checked it (src/schemes/scheme_registry.h enumerates them). Nothing here knows a
// scheme: each candidate carries its scheme's grid and the function that accounts its work.
#include <any>
#include <functional>
#include <string>
#include <vector>

#include "src/options/options.h"
#include "src/plan/rank_work.h"

namespace mlps {

struct PlanCandidate {
  std::string scheme;  // the executable's name, bin/<scheme>
  Options options;     // the model, batch, precision and checkpointing it runs with
  int world = 1;
  int replicas = 1;  // D: the data-parallel copies of the model
  int stages = 1;    // pipeline stages (1: the whole model on every rank of a replica)
  std::vector<std::string> flags;  // the scheme's own flags, e.g. {"--pp", "2", ...}
  // The scheme's resolved grid (its <scheme>_grid.h type) and its accounting of each rank's
  // work on it (rank_work.h).
  using WorkFunction = std::vector<RankWork> (*)(const PlanCandidate&, SchemeShape&);
  std::any grid;
  WorkFunction work = nullptr;
  // How a run places its ranks (0: the machine's ranks per node, and the executables' split of
  // a CPU node's cores among its ranks); a run's own prediction sets them (run_prediction.h).
  int ranks_on_node = 0;
  int threads_per_rank = 0;
  // Each world rank's node as the run placed them (RankPlacement::node_of_rank); empty: ranks
  // fill nodes in order, ranks_on_node (or the machine's ranks per node) to a node.
  std::vector<int> rank_nodes;

  // What a scheme resolved: its grid, the function that accounts work on it, and the grid's
  // data-parallel replicas and pipeline stages.
  void set_grid(std::any resolved, WorkFunction work_function, int replica_count,
                int stage_count = 1) {
    grid = std::move(resolved);
    work = work_function;
    replicas = replica_count;
    stages = stage_count;
  }
  int tensor_ranks() const { return world / replicas / pipeline_stages(); }
  int pipeline_stages() const { return stages; }
  template <typename Grid>
  const Grid& grid_as() const { return std::any_cast<const Grid&>(grid); }
  template <typename Grid>
  Grid& grid_as() { return std::any_cast<Grid&>(grid); }
  // "pipeline --pp 2 --micro-batches 8 --schedule 1f1b --precision bf16": the label a table row
  // and --explain use.
  std::string label() const;
  // The command that runs it: "mpiexec -n 4 bin/pipeline --pp 2 ... --hidden 64 ... --batch 32",
  // the model and batch the plan was made for spelled out (a run's defaults are the tutorial's).
  std::string command() const;
};

// Adds `c` when the scheme's own rules accept it (`resolve` throws InputError otherwise).
void add_if_accepted(std::vector<PlanCandidate>& out, PlanCandidate c,
                     const std::function<void(PlanCandidate&)>& resolve);
// A copy of `base` for `scheme` with its `flags`.
PlanCandidate candidate_of(const PlanCandidate& base, const std::string& scheme,
                           std::vector<std::string> flags);
// 2..n's divisors of n.
std::vector<int> divisors_above_one(int n);

}  // namespace mlps

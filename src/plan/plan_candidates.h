#pragma once
// bin/plan's candidates, each checked by the resolve/check functions its executable calls.
#include <optional>
#include <string>
#include <vector>

#include "src/options.h"
#include "src/schemes/data/data_parallel_base.h"
#include "src/schemes/pipeline/pipeline_layout.h"
#include "src/schemes/tensor1d/tensor1d_plan.h"
#include "src/schemes/tensor2d/grid_2d.h"
#include "src/schemes/tensor3d/grid_3d.h"

namespace mlps {

struct PlanCandidate {
  std::string scheme;  // "serial", "data", "pipeline", "tensor1d", "tensor2d", "tensor3d"
  Options options;     // the model, batch, precision and checkpointing it runs with
  int world = 1;
  DataParallelConfig data;                // data: --zero
  std::optional<PipelineLayout> pipeline;  // pipeline
  std::optional<Tensor1dPlan> tensor1d;   // tensor1d (dp: replicas)
  GridShape tensor2d;                     // tensor2d
  Shape3d tensor3d;                       // tensor3d
  int replicas = 1;                       // D: the data-parallel copies of the model
  std::vector<std::string> flags;         // the scheme's own flags, e.g. {"--pp", "2", ...}
  // How a run places its ranks (0: the machine's ranks per node, and the executables' split of
  // a CPU node's cores among its ranks); a run's own prediction sets them (run_prediction.h).
  int ranks_on_node = 0;
  int threads_per_rank = 0;

  int tensor_ranks() const { return world / replicas / pipeline_stages(); }
  int pipeline_stages() const { return pipeline ? pipeline->stages : 1; }
  // "pipeline --pp 2 --micro-batches 8 --schedule 1f1b --precision bf16": the label a table row
  // and --explain use.
  std::string label() const;
  // The command that runs it: "mpiexec -n 4 bin/pipeline --pp 2 ... --hidden 64 ... --batch 32",
  // the model and batch the plan was made for spelled out (a run's defaults are the tutorial's).
  std::string command() const;
};

// Every candidate for `world` ranks: serial (one rank), data (--zero 0-3), pipeline (P > 1
// dividing the world, M = P, 2P, 4P, each schedule; interleaved with v = 2), tensor1d (T > 1),
// tensor2d (q > 1, q² dividing the world), tensor3d (x·y·z > 1 dividing the world), each with
// checkpointing off and on, in each of `precisions`; grids the schemes refuse are left out.
std::vector<PlanCandidate> enumerate_candidates(const Options& options, int world,
                                                const std::vector<Precision>& precisions);

}  // namespace mlps

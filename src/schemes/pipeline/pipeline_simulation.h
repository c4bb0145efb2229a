#pragma once
// Runs every rank's action list on a model of the machine: each pass takes its PassTimes, and
// starts when its rank is free and its input is there (the previous virtual stage's forward,
// the next one's B), with no communication time. What the schedules' tests and bubble
// formulas are checked against.
#include <vector>

#include "src/schemes/pipeline/pipeline_shape.h"

namespace mlps {

struct SimulatedPipeline {
  double makespan = 0;
  std::vector<double> busy;  // per rank: the time it computes
  bool deadlocked = false;   // some rank's next action can never start
};

SimulatedPipeline simulate_pipeline(const PipelineShape& shape,
                                    const std::vector<std::vector<PipelineAction>>& actions,
                                    const PassTimes& times);
// The same with each rank's own pass times (a rank's chunks share them).
SimulatedPipeline simulate_pipeline(const PipelineShape& shape,
                                    const std::vector<std::vector<PipelineAction>>& actions,
                                    const std::vector<PassTimes>& rank_times);

}  // namespace mlps

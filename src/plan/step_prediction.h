#pragma once
// bin/plan's model of one training step of a candidate on a machine, per rank (the slowest
// rank where they differ), from the schemes' own accounting: their analytic communication
// volumes (what every run's measured bytes are checked against) and their memory estimates
// (what every run checks before it allocates). The formulas and what they ignore: README,
// Planning.
#include <map>
#include <string>

#include "src/memory/memory_need.h"
#include "src/plan/machine_description.h"
#include "src/plan/plan_candidates.h"

namespace mlps {

// One collective kind on one group, per step.
struct PredictedComm {
  int group_size = 1;
  bool inter_node = false;  // some group of this axis spans nodes
  double bytes = 0;         // nccl-tests size, summed over the step's calls
  double calls = 0;
  double seconds = 0;
};

struct StepPrediction {
  double compute = 0;      // GEMM flops at the machine's rate
  double weights_from_memory = 0;  // the GEMMs' weights and gradients streamed from memory
  double elementwise = 0;  // bias, ReLU, LayerNorm, residual, loss bytes at its bandwidth
  double send_buffer_copies = 0;  // reduce-scatter inputs copied when posted (MPI): in comm
  double optimizer = 0;    // the update's bytes at its bandwidth
  double data_loading = 0;  // the loader's samples, where no core (nor bubble) is left for it
  double bubble = 0;       // pipeline idle time
  double bubble_fraction = 0;
  double comm = 0;          // every collective's time, and the send-buffer copies
  double exposed_comm = 0;  // what the scheme does not hide behind compute (copies included)
  double step = 0;
  double samples_per_second = 0;
  std::map<std::string, PredictedComm> collectives;  // by result key, "allreduce:data"
  // A rank's own work: GEMMs, their weights from memory and element-wise kernels.
  double work() const { return compute + weights_from_memory + elementwise; }
  MemoryNeed memory;            // the rank that needs most
  double memory_available = 0;  // per rank on this machine
  bool fits() const { return memory.total() <= memory_available; }
};

StepPrediction predict_step(const PlanCandidate& candidate, const MachineDescription& machine);

}  // namespace mlps

#pragma once
// bin/plan's model of one training step of a candidate on a machine, per rank (the slowest
// rank where they differ), from the schemes' own accounting: their analytic communication
// volumes (what every run's measured bytes are checked against) and their memory estimates
// (what every run checks before it allocates). The formulas and what they ignore: docs/planning.md.
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
  GemmRate gemm;           // the rate its GEMMs are priced at (MachineDescription::gemm_rate)
  // GEMM flops at that rate; on tensor cores each GEMM's roofline, its weights' reads included.
  double compute = 0;
  double gemm_memory_bound = 0;  // of compute: what the roofline's bytes add over the flops
  double weights_from_memory = 0;  // the GEMMs' weights and gradients streamed from memory
  double elementwise = 0;  // bias, ReLU, LayerNorm, residual, loss bytes at its bandwidth
  double send_buffer_copies = 0;  // reduce-scatter inputs copied when posted (MPI): in comm
  double optimizer = 0;    // the update's bytes at its bandwidth
  double param_fetch = 0;  // offloaded parameters brought back (bin/data --offload +params)
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

// A GEMM's flops and the bytes it moves between memory and the chip.
struct GemmCost {
  double flops = 0;
  double bytes = 0;
};
// The GEMMs of Linear(in → out) on `rows` rows, `element` bytes an operand: forward (X and W
// read, Y written), input gradient (dY and W read, dX written; none for the embed, whose input
// needs no gradient) and weight gradient (dY and X read, dW read and written: it accumulates).
// W's reads are left out when `weight_in_cache` (gathered just before its GEMMs).
struct LinearGemmCosts {
  GemmCost forward, grad_input, grad_weight;
};
// `gradient_element`: dW's bytes per element (fp32 beside typed 16-bit storage; 0: `element`).
LinearGemmCosts linear_gemm_costs(const LinearShape& linear, double rows, double element,
                                  bool weight_in_cache, double gradient_element = 0);
// A GEMM on tensor cores: the slower of its flops at `flops_rate` and its bytes at `bandwidth`.
double roofline_seconds(const GemmCost& gemm, double flops_rate, double bandwidth);

}  // namespace mlps

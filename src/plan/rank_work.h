#pragma once
// What one rank of a candidate does in a step, as its scheme accounts it: GEMM flops and the
// rows they run on, the weights they read, element-wise bytes on the rank's own activations, the
// parameters it updates, the samples its loader makes, each collective's volume (the scheme's
// own analytic tables) and calls, and its memory; and how the scheme's groups map onto its grid.
// bin/plan's step model (step_prediction.h) prices it on a machine. Each scheme fills it in
// its own folder (src/schemes/<scheme>/<scheme>_scheme.cpp); nothing here knows a scheme.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/grid/process_grid.h"
#include "src/memory/memory_need.h"
#include "src/model/model_config.h"
#include "src/options/options.h"

namespace mlps {

struct PlanCandidate;

// Which of a rank's collectives hide behind its compute when collectives progress during it
// (docs/planning.md); the rest wait in the open.
struct CommHiding {
  enum class Window { none, backward, step };
  Window window = Window::none;     // what the hidden ones overlap (none: nothing hides)
  bool allgathers_exposed = false;  // all-gathers wait all the same (after the update)
  // Keys of which only this many calls wait, each at the key's mean call (a pipeline's sends
  // at its stage boundaries); their other calls overlap the neighbours' compute.
  std::map<std::string, double> exposed_calls;
  // Its buffers are started before compute and waited for after it: with no progress
  // meanwhile, they have left the caches (ZeRO-3's overlapped units).
  bool cold_buffers = false;
};

struct RankWork {
  double gemm_flops = 0;         // forward, backward and any recompute
  double recompute_flops = 0;    // of which checkpointing's second forward
  double gemm_rows = 1;          // the rows its GEMMs run on (their rate depends on it)
  // The Linears its GEMMs multiply in one call, each at gemm_rows rows, as the rank holds them
  // (a stage's, a tensor-parallel shard or SUMMA panel, a gathered 3D block): the shapes a GEMM
  // roofline prices (step_prediction.h); a step makes several calls (micro-batches, SUMMA steps).
  std::vector<LinearShape> gemm_linears;
  double loaded_rows = 1;        // the samples its data loader makes (its trainer's batch_slice)
  double gemm_parameters = 0;    // the weights its GEMMs read (gathered ones included)
  bool weights_gathered = false;  // gathered right before its GEMMs, which then read them in cache
  StepElementwiseBytes elementwise;
  double optimized_parameters = 0;
  // --offload optimizer: the optimizer state its update streams from its scratch file and back
  // each step (bytes, read once and written once).
  double offloaded_state_bytes = 0;
  // --offload optimizer on a GPU: the bytes crossing between the GPU and its host each step
  // (the shard's gradients down, its updated values up), the host updating the state.
  double exchanged_bytes = 0;
  // --offload optimizer+params: the parameter shard's bytes brought back each step (every unit's
  // before its forward's gather and again before its backward's), from the offloaded state's
  // tier, not overlapped with compute.
  double fetched_bytes = 0;
  // bf16/fp16 in 16-bit buffers (bin/serial): values and activations at 2 bytes, weight
  // gradients and optimizer state at 4 (memory_need.h's element_sizes); else emulated.
  bool typed_16bit = false;
  std::map<std::string, double> bytes;  // the scheme's analytic volumes
  std::map<std::string, double> calls;  // collectives per key (latency terms)
  // Where a key's calls differ in size, each call's share of its bytes (DDP's and ZeRO-1/2's
  // buckets: a 1 MiB first one, then up to --bucket-mb), each priced at its own size's busbw
  // where communication progresses during compute (else all of them as one message).
  std::map<std::string, std::vector<double>> call_shares;
  MemoryNeed memory;
  CommHiding hiding;
  // The micro-batches its GEMMs run over, each re-reading the weights (a pipeline's M).
  int micro_batches = 1;
  // A pipeline's idle fraction of the step, from the step's forward, backward (W's included)
  // and weight-gradient seconds; empty where no rank waits on another's compute.
  std::function<double(double forward, double backward, double weight)> bubble_fraction;
};

// How a scheme's groups map onto its grid.
struct SchemeShape {
  std::vector<GridAxis> axes;
  std::map<std::string, std::string> axis_of_group;  // "tp" → "tensor"; "world" for bare kinds
};

// Every rank whose work differs (a pipeline's stages; one rank for the other schemes), with the
// scheme's grid written into `shape`: the candidate's own accounting (PlanCandidate::work).
std::vector<RankWork> rank_work(const PlanCandidate& c, SchemeShape& shape);

// The building blocks of the schemes' accounting.
// The work of a rank that runs `share` of its replica's model on `rows` rows. Its element-wise
// kernels: on `own` activations where the scheme gives them (a tensor-parallel rank's, at the
// slice widths its memory counts: whole where it replicates them, as tensor1d's LayerNorm and
// residual without sequence parallelism), else `share` of the replica's. `typed`: bf16 and
// fp16 in 16-bit buffers, as every executable trains them.
RankWork replica_share(const Options& o, double rows, double share,
                       const ActivationSlice* own = nullptr, bool typed = false);
// The most rows one of `parts` gets of `batch`.
double max_rows(int64_t batch, int parts);
// Bytes per element on the wire: values, and gradients (fp32 with --fp32-grad-comm).
size_t value_wire_bytes(const Options& o);
size_t gradient_wire_bytes(const Options& o);

}  // namespace mlps

#pragma once
// What a scheme supplies to the shared driver: how this rank holds the model, which rows of a
// global batch it loads, and one training step (forward, backward, gradient synchronisation,
// optimizer). The driver owns everything else: data order, warm-up, timing, evaluation,
// verification and output.
#include <cstdint>
#include <string>
#include <vector>

#include <map>

#include "src/comm/comm_log.h"
#include "src/data/batch_loader.h"
#include "src/timing/phase_timer.h"

namespace mlps {

// Rows [first, first + count) of a global batch.
struct BatchSlice {
  int64_t first = 0;
  int64_t count = 0;
};

// Rows [r·G/N, (r+1)·G/N) of a global batch of G rows for rank r of N.
inline BatchSlice even_batch_slice(int64_t global_rows, int rank, int ranks) {
  const int64_t first = global_rows * rank / ranks;
  return {first, global_rows * (rank + 1) / ranks - first};
}

// A forward pass over a global evaluation batch, the same on every rank.
struct Evaluation {
  int64_t correct = 0;  // correct predictions
  double loss_sum = 0;  // Σ over the rows of the cross-entropy loss
};

// A tensor of the full model in fp64, for verification.
struct NamedTensor {
  std::string name;
  std::vector<double> values;
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  virtual std::string scheme() const = 0;
  virtual std::string grid() const = 0;
  // The rows of a global batch of `global_rows` samples that this rank loads.
  virtual BatchSlice batch_slice(int64_t global_rows) const = 0;
  // One optimizer step over the global batch, given this rank's rows: queued on the device,
  // which the host waits for only where the scheme must (the step's end is the caller's).
  virtual void train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) = 0;
  // The last step's mean loss over the global batch, the same on every rank: read after the
  // step's end (it waits for the device); collective over the trainer's ranks.
  virtual double step_loss() = 0;
  // Forward only (no optimizer step) over a global evaluation batch of global_rows samples,
  // given this rank's rows.
  virtual Evaluation evaluate(const HostBatch& rows, int64_t global_rows) = 0;
  // The full parameters on rank 0 (empty on other ranks), in the model's tensor order.
  virtual std::vector<NamedTensor> gather_parameters() = 0;
  virtual int64_t parameter_count() const = 0;
  // Bytes the optimizer moves per step on this rank (for the step-time floor).
  virtual double optimizer_bytes_per_step() const = 0;
  // The device this rank computes on (timers use its events; its peak bytes are reported).
  virtual const Device& device() const = 0;
  // The library call of the step's GEMMs, e.g. "cblas_sgemm" (for result files).
  virtual std::string gemm_call() const = 0;
  // How mixed precision's 16-bit tensors are held: "typed" (in 16-bit buffers), "emulated" (fp32
  // buffers holding rounded values), or "full" for fp32 and fp64 runs.
  virtual std::string storage() const = 0;
  // This iteration's communication per collective kind, and the time this rank was blocked
  // waiting for communication (the exposed part); both restart for the next iteration.
  virtual std::map<std::string, CommTotals> take_comm_totals() { return {}; }
  // The rank's communication log (its recent calls, for --timeout's report); null without one.
  virtual const CommLog* comm_log() const { return nullptr; }
  // Hands every communication call, once complete, to `sink` (a timeline; null: none).
  virtual void set_comm_event_sink(CommEventSink* /*sink*/) {}
  // Timings a scheme adds to /timing (e.g. a pipeline's "bubble"): the same names on every
  // rank, and per iteration one value per name, in seconds.
  virtual std::vector<std::string> extra_timing_names() const { return {}; }
  virtual std::vector<double> take_extra_timings() { return {}; }
  // "mpi" or "nccl"; "none" for a scheme without collectives.
  virtual std::string comm_backend() const { return "none"; }
  virtual double take_blocked_comm_seconds() { return 0; }
};

}  // namespace mlps

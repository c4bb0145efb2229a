#pragma once
// What every scheme's trainer repeats, written once: the device it computes on, its optimizer,
// the model's parameter count, and its communication log (per-iteration totals, the smallest and
// largest bytes seen per collective for the volume reports, blocked time, and dropping what an
// evaluation between training steps logged); and ForwardBackwardTrainer, the step and the
// evaluation of every scheme but the pipeline, written once around the scheme's passes.
#include <mpi.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "src/comm/comm_volume_report.h"
#include "src/comm/make_communicator.h"
#include "src/model/model_config.h"
#include "src/optim/optimizer.h"
#include "src/schemes/trainer.h"

namespace mlps {

// What every parallel scheme's trainer is built from; the scheme adds its grid or layout.
struct TrainerSetup {
  DeviceConfig device{DeviceKind::cpu};
  ModelConfig model;
  OptimizerConfig optimizer;
  uint64_t seed = 0;         // of the initial weights
  int64_t global_batch = 0;  // the training batch (evaluation batches may be smaller)
  CommBackend backend = CommBackend::mpi;
  MPI_Comm world = MPI_COMM_WORLD;  // the trainer's ranks; its constructor is collective over them
};

template <typename T>
class SchemeTrainer : public Trainer {
 public:
  int64_t parameter_count() const override { return parameter_count_; }
  double optimizer_bytes_per_step() const override { return optimizer_.bytes_per_step(); }
  const Device& device() const override { return device_; }
  std::string gemm_call() const override {
    if constexpr (is_16bit_v<T>) return device_.gemm_16bit_call();
    else return device_.gemm_call(std::is_same_v<T, double>);
  }
  std::string storage() const override {
    if (device_.storage_format() == StorageFormat::full) return "full";
    return is_16bit_v<T> ? "typed" : "emulated";
  }
  std::map<std::string, CommTotals> take_comm_totals() override {
    auto totals = log_->take_totals();
    for (const auto& [kind, t] : totals) {
      const auto calls = static_cast<double>(t.calls);
      const auto [it, first] =
          measured_.try_emplace(kind, MeasuredVolume{{t.bytes, t.bytes}, {calls, calls}});
      if (first) continue;
      MeasuredVolume& m = it->second;
      for (auto [range, value] : {std::pair{&m.bytes, t.bytes}, {&m.calls, calls}})
        *range = {std::min(range->min, value), std::max(range->max, value)};
    }
    return totals;
  }
  double take_blocked_comm_seconds() override { return log_->take_blocked_seconds(); }
  // With its optimizer's state offloaded (--offload): the time each update waited for the
  // scratch file's reads and writes and a GPU's copies, as /timing/offload_wait, and a GPU's
  // host update of the state, as /timing/host_update.
  std::vector<std::string> extra_timing_names() const override {
    if (!optimizer_.offloaded()) return {};
    if (device_.kind() == DeviceKind::cuda) return {"offload_wait", "host_update"};
    return {"offload_wait"};
  }
  std::vector<double> take_extra_timings() override {
    if (!optimizer_.offloaded()) return {};
    const OffloadTraffic t = optimizer_.offload_traffic();
    std::vector<double> step = {t.wait_seconds - offload_taken_.wait_seconds};
    if (device_.kind() == DeviceKind::cuda)
      step.push_back(t.host_update_seconds - offload_taken_.host_update_seconds);
    offload_taken_ = t;
    return step;
  }
  const CommLog* comm_log() const override { return log_.get(); }
  void set_comm_event_sink(CommEventSink* sink) override { log_->set_event_sink(sink); }
  // Bytes and calls per collective kind over the training iterations so far (smallest and
  // largest).
  const std::map<std::string, MeasuredVolume>& measured_volumes() const { return measured_; }

 protected:
  // `consensus`: the ranks whose fp16 loss scaling must agree (MPI_COMM_SELF for one rank).
  SchemeTrainer(const DeviceConfig& device, const ModelConfig& model, const OptimizerConfig& optimizer,
                MPI_Comm consensus = MPI_COMM_WORLD)
      : device_(device), log_(std::make_shared<CommLog>()),
        optimizer_(device_, optimizer, consensus),
        parameter_count_(mlps::parameter_count(model)) {}
  explicit SchemeTrainer(const TrainerSetup& setup)
      : SchemeTrainer(setup.device, setup.model, setup.optimizer, setup.world) {}

  // Drops what the log holds from outside an iteration (an evaluation between training steps),
  // so each train_step or evaluate records only its own communication.
  void discard_untaken_comm() {
    log_->take_totals();
    log_->take_blocked_seconds();
  }

  Device device_;
  std::shared_ptr<CommLog> log_;
  Optimizer<T> optimizer_;
  OffloadTraffic offload_taken_;  // the offloaded state's totals, so far
  int64_t parameter_count_;

 private:
  std::map<std::string, MeasuredVolume> measured_;
};

// A scheme whose step is one forward and one backward pass over this rank's rows (all but the
// pipeline's micro-batches): the step and the evaluation around the scheme's passes.
template <typename T>
class ForwardBackwardTrainer : public SchemeTrainer<T> {
 public:
  // Forward, backward, optimizer, each timed; nothing read back.
  void train_step(const HostBatch& rows, int64_t global_batch, PhaseTimer& timer) final {
    this->discard_untaken_comm();
    {
      ScopedPhase phase(timer, Phase::forward);
      forward(rows);
    }
    {
      ScopedPhase phase(timer, Phase::backward);
      backward(rows.rows, global_batch, timer);
    }
    {
      ScopedPhase phase(timer, Phase::optimizer);
      this->optimizer_.step();
      after_optimizer_step();
    }
    global_batch_ = global_batch;
  }

  // The speakers' losses summed over metrics_comm() and divided by the global batch.
  double step_loss() final {
    double local = speaker() ? loss_sum() : 0.0, total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, metrics_comm());
    return total / static_cast<double>(global_batch_);
  }

  // The forward pass alone, on every rank (rows or none: the collectives span the groups); the
  // speakers' loss and correct predictions summed with plain MPI, as the training loss: not
  // part of the scheme's measured communication.
  Evaluation evaluate(const HostBatch& rows, int64_t /*global_rows*/) final {
    this->discard_untaken_comm();  // this pass's traffic is --inference's iteration
    forward(rows);
    double totals[2] = {0, 0};  // Σ loss, correct predictions
    if (speaker()) {
      totals[0] = loss_sum();
      const auto predicted = predictions(rows.rows);
      for (int64_t r = 0; r < rows.rows; ++r) totals[1] += predicted[r] == rows.labels[r];
    }
    MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_DOUBLE, MPI_SUM, metrics_comm());
    return {static_cast<int64_t>(totals[1]), totals[0]};
  }

 protected:
  using SchemeTrainer<T>::SchemeTrainer;
  // Queues the forward pass over this rank's rows (FcNet::queue_forward).
  virtual void forward(const HostBatch& rows) = 0;
  // Σ over this rank's rows of the last forward's loss; waits for the device.
  virtual double loss_sum() = 0;
  // Backward of the mean loss over global_batch samples; every gradient this rank's optimizer
  // reads is complete (synchronised) on return. Checkpointing's recompute is timed on `timer`.
  virtual void backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) = 0;
  // The predicted class of each of the last forward pass's rows.
  virtual std::vector<int32_t> predictions(int64_t rows) const = 0;
  virtual void after_optimizer_step() {}
  // The ranks whose speakers together hold every sample of the global batch once.
  virtual MPI_Comm metrics_comm() const = 0;
  // Whether this rank counts its rows' loss (one rank of each group holding the same samples).
  virtual bool speaker() const { return true; }

 private:
  int64_t global_batch_ = 1;  // of the last step
};

}  // namespace mlps

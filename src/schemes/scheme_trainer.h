#pragma once
// What every scheme's trainer repeats, written once: the device it computes on, its optimizer,
// the model's parameter count, and its communication log (per-iteration totals, the smallest and
// largest bytes seen per collective for the volume reports, blocked time, and dropping what an
// evaluation between training steps logged), plus the step and evaluation skeletons of the
// schemes whose net holds the whole model on every rank in shards (tensor2d, tensor3d).
#include <mpi.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "src/comm/comm_volume_report.h"
#include "src/model_config.h"
#include "src/optim/optimizer.h"
#include "src/schemes/trainer.h"

namespace mlps {

template <typename T>
class SchemeTrainer : public Trainer {
 public:
  int64_t parameter_count() const override { return parameter_count_; }
  double optimizer_bytes_per_step() const override { return optimizer_.bytes_per_step(); }
  const Device& device() const override { return device_; }
  std::map<std::string, CommTotals> take_comm_totals() override {
    auto totals = log_->take_totals();
    for (const auto& [kind, t] : totals) {
      const auto [it, first] = measured_.try_emplace(kind, ByteRange{t.bytes, t.bytes});
      if (!first)
        it->second = {std::min(it->second.min, t.bytes), std::max(it->second.max, t.bytes)};
    }
    return totals;
  }
  double take_blocked_comm_seconds() override { return log_->take_blocked_seconds(); }
  const CommLog* comm_log() const override { return log_.get(); }
  // Bytes per collective kind over the training iterations so far (smallest and largest).
  const std::map<std::string, ByteRange>& measured_bytes() const { return measured_; }

 protected:
  // `consensus`: the ranks whose fp16 loss scaling must agree (MPI_COMM_SELF for one rank).
  SchemeTrainer(const DeviceConfig& device, const ModelConfig& model, const OptimizerConfig& optimizer,
                MPI_Comm consensus = MPI_COMM_WORLD)
      : device_(device), log_(std::make_shared<CommLog>()),
        optimizer_(device_, optimizer, consensus),
        parameter_count_(mlps::parameter_count(model)) {}

  // Drops what the log holds from outside an iteration (an evaluation between training steps),
  // so each train_step or evaluate records only its own communication.
  void discard_untaken_comm() {
    log_->take_totals();
    log_->take_blocked_seconds();
  }

  // One step of a net holding this rank's shard of the whole model: forward, backward,
  // optimizer, each timed; the loss is summed over `world` from the `speaker` ranks (one per
  // group of ranks holding the same samples) and divided by the global batch.
  template <typename Net>
  double step_sharded_net(Net& net, const HostBatch& rows, int64_t global_batch,
                          PhaseTimer& timer, bool speaker, MPI_Comm world) {
    discard_untaken_comm();
    double loss_sum = 0;
    {
      ScopedPhase phase(timer, Phase::forward);
      loss_sum = net.forward(rows);
    }
    {
      ScopedPhase phase(timer, Phase::backward);
      net.backward(rows.rows, global_batch, &timer);
    }
    {
      ScopedPhase phase(timer, Phase::optimizer);
      optimizer_.step();
    }
    double local = speaker ? loss_sum : 0.0, total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, world);
    return total / static_cast<double>(global_batch);
  }

  // The forward pass alone (every rank runs it, rows or none: the collectives span the
  // groups); loss and correct predictions summed over `world` from the speaker ranks, with
  // plain MPI, as the training loss: not part of the scheme's measured communication.
  template <typename Net>
  Evaluation evaluate_sharded_net(Net& net, const HostBatch& rows, bool speaker, MPI_Comm world) {
    discard_untaken_comm();  // this pass's traffic is --inference's iteration
    const double loss_sum = net.forward(rows);
    double totals[2] = {0, 0};  // Σ loss, correct predictions
    if (speaker) {
      totals[0] = loss_sum;
      const auto predicted = net.predictions(rows.rows);
      for (int64_t r = 0; r < rows.rows; ++r) totals[1] += predicted[r] == rows.labels[r];
    }
    MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_DOUBLE, MPI_SUM, world);
    return {static_cast<int64_t>(totals[1]), totals[0]};
  }

  Device device_;
  std::shared_ptr<CommLog> log_;
  Optimizer<T> optimizer_;
  int64_t parameter_count_;

 private:
  std::map<std::string, ByteRange> measured_;
};

}  // namespace mlps

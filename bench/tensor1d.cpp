// bin/tensor1d: Megatron-LM tensor parallelism (column-parallel then row-parallel Linear, one
// all-reduce per pair in each direction) over --tp ranks, × --dp data-parallel replicas.
#include <cstdio>
#include <optional>

#include "src/comm/comm_volume_report.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/memory/scheme_memory.h"
#include "src/schemes/tensor1d/tensor1d_trainer.h"

namespace mlps {
namespace {

// --tp × --dp must be the world size; a missing one is the world size over the other.
void resolve_grid(int world, int& tp, int& dp) {
  const std::string ranks = " the " + std::to_string(world) + " ranks";
  if (tp == 0 && dp == 0) tp = world;
  if (tp == 0) {
    if (world % dp != 0) throw InputError("--dp " + std::to_string(dp) + " does not divide" + ranks);
    tp = world / dp;
  }
  if (dp == 0) {
    if (world % tp != 0) throw InputError("--tp " + std::to_string(tp) + " does not divide" + ranks);
    dp = world / tp;
  }
  if (static_cast<int64_t>(tp) * dp != world)
    throw InputError("--tp " + std::to_string(tp) + " x --dp " + std::to_string(dp) + " = " +
                     std::to_string(static_cast<int64_t>(tp) * dp) + " does not match" + ranks);
}

// Rank 0: the volumes beside the measured ones and, after --verify, whether the replicated
// tensors stayed identical on every tp rank.
template <typename T>
void print_report(const Tensor1dTrainer<T>& trainer, const Options& o, const Tensor1dPlan& plan) {
  // With --inference the measured volumes are the forward passes' (and no weights are gathered,
  // so there is no replicated-tensor comparison).
  CommCalls calls;
  const auto bytes = trainer.analytic_bytes(o.batch, o.inference, &calls);
  print_comm_volumes(stdout, "rank 0", bytes, trainer.measured_volumes(), &calls);
  if (o.verify && plan.tp > 1 && !o.inference) {
    if (trainer.most_divergent_tensor().empty())
      std::printf("replicated tensors: identical on all %d tp ranks\n", plan.tp);
    else
      std::printf("replicated tensors: differ between tp ranks, by up to %.3e (%s)\n",
                  trainer.replica_divergence(), trainer.most_divergent_tensor().c_str());
  }
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  using namespace mlps;
  int tp_given = 0, dp_given = 0, dp = 1;
  bool sequence_parallel = false;
  std::optional<Tensor1dPlan> plan;
  SchemeDefinition scheme;
  scheme.name = "tensor1d";
  scheme.description = "Megatron-LM tensor parallelism: column-parallel then row-parallel "
                       "Linear in every block, x data-parallel replicas.";
  scheme.add_options = [&](CLI::App& app) {
    app.add_option("--tp", tp_given, "tensor-parallel ranks per replica (default: the ranks "
                   "over --dp)")->check(CLI::Range(1, 1 << 20));
    app.add_option("--dp", dp_given, "data-parallel replicas (default: the ranks over --tp); "
                   "rank = replica x tp + tp rank")->check(CLI::Range(1, 1 << 20));
    app.add_flag("--sequence-parallel", sequence_parallel, "Megatron sequence parallelism: "
                 "LayerNorm and residual on 1/T of the rows, an all-gather and a "
                 "reduce-scatter in place of each all-reduce (residual blocks; T must divide "
                 "--hidden and each replica's rows; no effect at --tp 1)");
  };
  scheme.check_grid = [&](const Options& o, int ranks) {
    int tp = tp_given;
    dp = dp_given;
    resolve_grid(ranks, tp, dp);
    if (o.batch < dp)
      throw InputError("--batch " + std::to_string(o.batch) + " leaves some of the " +
                       std::to_string(dp) + " data-parallel replicas without samples");
    plan = make_tensor1d_plan(o.model, tp, sequence_parallel);
    check_sequence_parallel_rows(*plan, o.batch, dp);
    return "tp=" + std::to_string(tp) + ",dp=" + std::to_string(dp) +
           (plan->sequence_parallel ? ",sp=1" : "");
  };
  scheme.describe = [&](PlanCandidate& c) {
    c.tensor1d = plan;
    c.replicas = dp;
  };
  scheme.memory = [&](const Options& o, int, int) { return tensor1d_memory(o, *plan, dp); };
  scheme.train = [&](SchemeStart& s) {
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) {
          return std::make_unique<Tensor1dTrainer<decltype(zero)>>(s.setup(), *plan, dp);
        },
        [&](const auto& trainer) {
          if (s.context.is_root()) print_report(trainer, s.options, *plan);
        });
  };
  return scheme_main(argc, argv, scheme);
}

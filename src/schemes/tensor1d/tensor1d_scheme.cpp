// bin/tensor1d: Megatron-LM tensor parallelism (column-parallel then row-parallel Linear, one
// all-reduce per pair in each direction) over --tp ranks, × --dp data-parallel replicas.
#include "src/schemes/tensor1d/tensor1d_scheme.h"

#include <cstdio>
#include <optional>

#include "src/base/errors.h"
#include "src/comm/comm_volume_report.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/rank_work.h"
#include "src/schemes/tensor1d/tensor1d_memory.h"
#include "src/schemes/tensor1d/tensor1d_trainer.h"

namespace mlps {
namespace {

// The first line of bin/tensor1d's --help.
constexpr const char* kDescription =
    "Megatron-LM tensor parallelism: column-parallel then row-parallel "
    "Linear in every block, x data-parallel replicas.";

// --tp × --dp must be the world size; a missing one is the world size over the other.
void resolve_grid(int world, int& tp, int& dp) {
  const std::string ranks = " the " + std::to_string(world) + " ranks";
  if (tp == 0 && dp == 0) tp = world;
  if (tp == 0) {
    if (world % dp != 0)
      throw InputError("--dp " + std::to_string(dp) + " does not divide" + ranks);
    tp = world / dp;
  }
  if (dp == 0) {
    if (world % tp != 0)
      throw InputError("--tp " + std::to_string(tp) + " does not divide" + ranks);
    dp = world / tp;
  }
  if (static_cast<int64_t>(tp) * dp != world)
    throw InputError("--tp " + std::to_string(tp) + " x --dp " + std::to_string(dp) + " = " +
                     std::to_string(static_cast<int64_t>(tp) * dp) + " does not match" + ranks);
}

// Rank 0: the volumes beside the measured ones and, after --verify, whether the replicated
// tensors stayed identical on every tp rank.
template <typename T>
void print_report(const Tensor1dTrainer<T>& trainer, const Options& o, const Tensor1dGrid& plan) {
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

std::vector<RankWork> tensor1d_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const Tensor1dGrid& plan = c.grid_as<Tensor1dGrid>();
  shape.axes = {{"data", c.replicas}, {"tensor", plan.tp}};
  shape.axis_of_group = {{"tp", "tensor"}, {"data", "data"}};
  const double rows = max_rows(o.batch, c.replicas);
  const double local = static_cast<double>(local_parameter_count(plan));
  const ActivationSlice own = tensor1d_activations(o, plan, c.replicas);
  RankWork w =
      replica_share(o, rows, local / static_cast<double>(parameter_count(o.model)), &own,
                    true);  // typed, as bin/tensor1d
  w.gemm_parameters = local;
  w.optimized_parameters = local;
  w.gemm_linears.clear();  // column-parallel Linears split their outputs, row-parallel inputs
  for (const PlannedLinear& l : plan.linears)
    w.gemm_linears.push_back(
        {l.shape.name, l.split == LinearSplit::row ? l.shape.in / plan.tp : l.shape.in,
         l.split == LinearSplit::column ? l.shape.out / plan.tp : l.shape.out});
  w.bytes = tensor1d_comm_bytes(plan, static_cast<int64_t>(rows), value_wire_bytes(o), c.replicas,
                                false, gradient_wire_bytes(o), &w.calls);
  w.memory = tensor1d_memory(o, plan, c.replicas);
  return {w};
}

void check_batch_covers_replicas(int64_t batch, int dp) {
  if (batch < dp)
    throw InputError("--batch " + std::to_string(batch) + " leaves some of the " +
                     std::to_string(dp) + " data-parallel replicas without samples");
}

void describe_grid(PlanCandidate& c, const Tensor1dGrid& grid, int dp) {
  c.set_grid(grid, tensor1d_work, dp);
}

// --tp T for every T > 1 dividing the world, with and without sequence parallelism.
void add_grid_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) {
  for (int t : divisors_above_one(base.world))
    for (bool sequence_parallel : {false, true}) {
      std::vector<std::string> flags = {"--tp", std::to_string(t)};
      if (sequence_parallel) flags.push_back("--sequence-parallel");
      add_if_accepted(out, candidate_of(base, "tensor1d", flags), [&](PlanCandidate& c) {
        const Options& o = c.options;
        const int dp = c.world / t;
        check_batch_covers_replicas(o.batch, dp);
        const Tensor1dGrid grid = make_tensor1d_grid(o.model, t, sequence_parallel);
        if (sequence_parallel) check_sequence_parallel_rows(grid, o.batch, dp);
        describe_grid(c, grid, dp);
      });
    }
}

class Tensor1dScheme final : public Scheme {
 public:
  Tensor1dScheme() : Scheme("tensor1d", kDescription) {}
  void add_options(CLI::App& app) override {
    app.add_option("--tp", tp_given_, "tensor-parallel ranks per replica (default: the ranks "
                   "over --dp)")->check(CLI::Range(1, 1 << 20));
    app.add_option("--dp", dp_given_, "data-parallel replicas (default: the ranks over --tp); "
                   "rank = replica x tp + tp rank")->check(CLI::Range(1, 1 << 20));
    app.add_flag("--sequence-parallel", sequence_parallel_, "Megatron sequence parallelism: "
                 "LayerNorm and residual on 1/T of the rows, an all-gather and a "
                 "reduce-scatter in place of each all-reduce (residual blocks; T must divide "
                 "--hidden and each replica's rows; no effect at --tp 1)");
  }
  std::string check_grid(const Options& o, int ranks) override {
    int tp = tp_given_;
    dp_ = dp_given_;
    resolve_grid(ranks, tp, dp_);
    check_batch_covers_replicas(o.batch, dp_);
    plan_ = make_tensor1d_grid(o.model, tp, sequence_parallel_);
    check_sequence_parallel_rows(*plan_, o.batch, dp_);
    return "tp=" + std::to_string(tp) + ",dp=" + std::to_string(dp_) +
           (plan_->sequence_parallel ? ",sp=1" : "");
  }
  void describe(PlanCandidate& c) const override { describe_grid(c, *plan_, dp_); }
  void add_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) const override {
    add_grid_candidates(out, base);
  }
  MemoryNeed memory(const Options& o, int, int) const override {
    return tensor1d_memory(o, *plan_, dp_);
  }
  int train(SchemeStart& s) override {
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) {
          return std::make_unique<Tensor1dTrainer<decltype(zero)>>(s.setup(), *plan_, dp_);
        },
        [&](const auto& trainer) {
          if (s.context.is_root()) print_report(trainer, s.options, *plan_);
        });
  }

 private:
  int tp_given_ = 0;
  int dp_given_ = 0;
  int dp_ = 1;
  bool sequence_parallel_ = false;
  std::optional<Tensor1dGrid> plan_;
};

}  // namespace

std::unique_ptr<Scheme> make_tensor1d_scheme() { return std::make_unique<Tensor1dScheme>(); }

}  // namespace mlps

// bin/tensor2d: 2D tensor parallelism (SUMMA / Optimus): every Linear a SUMMA product on a
// q × q grid with broadcasts along grid rows and columns, LayerNorm statistics reduced over the
// grid row; optionally × --dp data-parallel replicas. At the end rank 0 prints each collective's
// analytic bytes per rank and iteration beside the measured ones, and the memory per rank.
#include "src/schemes/tensor2d/tensor2d_scheme.h"

#include <cstdio>

#include "src/base/balanced_split.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/grid/process_grid.h"
#include "src/options/cli_validators.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/rank_work.h"
#include "src/schemes/tensor2d/tensor2d_memory.h"
#include "src/schemes/tensor2d/tensor2d_trainer.h"
#include "src/schemes/tensor2d/tensor2d_volumes.h"

namespace mlps {
namespace {

// The first line of bin/tensor2d's --help.
constexpr const char* kDescription =
    "2D tensor parallelism (SUMMA): every Linear a SUMMA product on a q x q "
    "grid, optionally x --dp data-parallel replicas.";

template <typename T>
void print_report(const Tensor2dTrainer<T>& trainer, const Options& o, const Tensor2dGrid& shape) {
  // With --inference the measured volumes are one forward pass's per batch. bf16/fp16 runs
  // carry every payload in 16 bits, but the "data" group's in fp32 with --fp32-grad-comm.
  const size_t wire = wire_bytes(storage_format(o.precision), sizeof(Acc<T>));
  CommCalls calls;
  auto volumes = tensor2d_volumes(o.model, o.batch, shape, wire, {}, o.inference, &calls);
  if (wire != sizeof(Acc<T>) && o.fp32_grad_comm && volumes.count("allreduce:data"))
    volumes["allreduce:data"] =
        tensor2d_volumes(o.model, o.batch, shape, sizeof(float), {}, o.inference)
            .at("allreduce:data");
  print_comm_volumes(stdout, "rank 0", volumes, trainer.measured_volumes(), &calls);
  const double q2 = static_cast<double>(shape.q) * shape.q;
  std::printf("memory per rank: parameter shards %lld B (weight blocks %lld B, about 1/%g of "
              "the weights), with gradients and optimizer state %lld B; peak %zu B\n",
              (long long)trainer.parameter_bytes(), (long long)trainer.weight_bytes(), q2,
              (long long)trainer.state_bytes(), trainer.device().peak_bytes());
}

std::vector<RankWork> tensor2d_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const Tensor2dGrid& grid = c.grid_as<Tensor2dGrid>();
  const int q = grid.q;
  shape.axes = {{"data", c.replicas}, {"rows", q}, {"cols", q}};
  shape.axis_of_group = {{"row", "cols"}, {"col", "rows"}, {"data", "data"}};
  const ActivationSlice own = tensor2d_activations(o, grid);
  RankWork w = replica_share(o, max_rows(o.batch, c.replicas), 1.0 / (q * q), &own,
                             true);  // typed, as bin/tensor2d
  w.gemm_rows = max_rows(o.batch, c.replicas * q);  // a grid row's share of the replica's rows
  w.loaded_rows = w.gemm_rows;
  w.optimized_parameters = static_cast<double>(parameter_count(o.model)) / (q * q);
  // A rank's GEMMs take a weight panel from each of the q steps: a grid row's worth, P/q.
  w.gemm_parameters = w.optimized_parameters * q;
  // Each step's GEMM: a panel of the largest blocks (rank (0, 0)'s).
  for (LinearShape& l : w.gemm_linears)
    l = {l.name, largest_part(l.in, q), largest_part(l.out, q)};
  w.bytes = tensor2d_volumes(o.model, o.batch, grid, value_wire_bytes(o),
                             {}, false, &w.calls);
  w.memory = tensor2d_memory(o, grid);
  return {w};
}

void describe_grid(PlanCandidate& c, const Tensor2dGrid& grid) {
  c.set_grid(grid, tensor2d_work, grid.dp);
}

// q × q grids for every q > 1 with q² dividing the world.
void add_grid_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) {
  const int world = base.world;
  for (int q = 2; q * q <= world; ++q)
    if (world % (q * q) == 0)
      add_if_accepted(out, candidate_of(base, "tensor2d", {"--tp-dims", dims_text({q, q})}),
                      [&](PlanCandidate& c) {
                        describe_grid(c, check_grid_fits(c.options.model, c.options.batch,
                                                    resolve_tensor2d_grid({q, q}, 0, world)));
                      });
}

class Tensor2dScheme final : public Scheme {
 public:
  Tensor2dScheme() : Scheme("tensor2d", kDescription) {}
  void add_options(CLI::App& app) override {
    app.add_option("--tp-dims", tp_dims_, "the q,q grid (square; default: the square root of the "
                   "ranks per replica)")
        ->delimiter(',')->check(non_empty())
        ->check(positive_integer_item("expected two positive integers q,q"));
    app.add_option("--dp", dp_, "data-parallel replicas of the grid (default: ranks / q²)")
        ->check(CLI::Range(1, 1 << 20));
  }
  void check_options(const Options&) override { check_tp_dims_2d(tp_dims_); }
  std::string check_grid(const Options& o, int ranks) override {
    shape_ = resolve_tensor2d_grid(tp_dims_, dp_, ranks);
    check_grid_fits(o.model, o.batch, shape_);
    return "tp-dims=" + dims_text({shape_.q, shape_.q}) + ",dp=" +
           std::to_string(shape_.dp);
  }
  void describe(PlanCandidate& c) const override { describe_grid(c, shape_); }
  void add_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) const override {
    add_grid_candidates(out, base);
  }
  MemoryNeed memory(const Options& o, int, int) const override {
    return tensor2d_memory(o, shape_);
  }
  int train(SchemeStart& s) override {
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) {
          return std::make_unique<Tensor2dTrainer<decltype(zero)>>(s.setup(), shape_);
        },
        [&](const auto& trainer) {
          if (s.context.is_root()) print_report(trainer, s.options, shape_);
        });
  }

 private:
  std::vector<int> tp_dims_;
  int dp_ = 0;
  Tensor2dGrid shape_;
};

}  // namespace

std::unique_ptr<Scheme> make_tensor2d_scheme() { return std::make_unique<Tensor2dScheme>(); }

}  // namespace mlps

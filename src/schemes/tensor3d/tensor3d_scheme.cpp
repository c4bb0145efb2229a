// bin/tensor3d: AxoNN-style 3D tensor parallelism (G_r × G_c × G_d = --tp-dims x,y,z), every
// Linear's weight block depth-sharded and all-gathered when used, optionally × --dp
// data-parallel replicas (AxoNN 4D). At the end rank 0 prints each layer's analytic collective
// volumes per training step (with --inference, per forward pass; with
// --checkpoint-activations, the recompute's too) as nccl-tests size and ring bytes sent, the
// totals beside the measured ones, and the memory per rank.
#include "src/schemes/tensor3d/tensor3d_scheme.h"

#include <cstdio>

#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/grid/process_grid.h"
#include "src/options/cli_validators.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/rank_work.h"
#include "src/schemes/tensor3d/tensor3d_memory.h"
#include "src/schemes/tensor3d/tensor3d_trainer.h"
#include "src/schemes/tensor3d/tensor3d_volumes.h"

namespace mlps {
namespace {

// The first line of bin/tensor3d's --help.
constexpr const char* kDescription =
    "AxoNN 3D tensor parallelism: an x (outer) × y (inner) × z (depth) grid "
    "per Linear, optionally x --dp data-parallel replicas.";

template <typename T>
void print_report(const Tensor3dTrainer<T>& trainer, const Options& o, const Tensor3dGrid& shape,
                  const Overlap3d& overlap) {
  // Mixed precision carries float payloads as 16-bit values, the data group in fp32 with
  // --fp32-grad-comm.
  const size_t wire = wire_bytes(storage_format(o.precision), sizeof(Acc<T>));
  auto layers = tensor3d_layer_volumes(o.model, o.batch, shape, wire, overlap.cache_weights,
                                       o.inference);
  if (o.fp32_grad_comm)
    for (Volume3d& v : layers)
      if (v.kind.ends_with(":data")) v.bytes *= static_cast<double>(sizeof(Acc<T>)) / wire;
  std::printf("analytic communication per layer and %s (rank 0):\n",
              o.inference ? "forward pass" : "training step");
  std::printf("  %-28s %-22s %14s %14s\n", "layer", "collective", "size B", "ring sent B");
  for (const Volume3d& v : layers)
    std::printf("  %-28s %-22s %14.0f %14.0f\n", v.layer.c_str(), v.kind.c_str(), v.bytes,
                v.ring_bytes());
  CommCalls calls;
  const auto bytes = tensor3d_volumes(layers, &calls);
  const bool equal =
      print_comm_volumes(stdout, "rank 0", bytes, trainer.measured_volumes(), &calls);
  std::printf("volumes: %s\n", equal ? "analytic == measured" : "analytic != measured");
  std::printf("memory per rank: weight shards %lld B (1/%d of the weights), vector slices "
              "%lld B, depth scratch %lld B (%s); peak %zu B\n",
              (long long)trainer.weight_bytes(), shape.tensor_ranks(),
              (long long)trainer.vector_bytes(), (long long)trainer.scratch_bytes(),
              shape.depth == 1          ? "none at z = 1"
              : overlap.cache_weights   ? "every layer's gathered block, cached, + dW"
                                        : "largest block, shared by the layers",
              trainer.device().peak_bytes());
}

std::vector<RankWork> tensor3d_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const Tensor3dGrid& s = c.grid_as<Tensor3dGrid>();
  shape.axes = {{"data", s.dp}, {"depth", s.depth}, {"outer", s.outer}, {"inner", s.inner}};
  for (const char* axis : {"data", "depth", "outer", "inner"}) shape.axis_of_group[axis] = axis;
  const ActivationSlice own = tensor3d_activations(o, s);
  RankWork w = replica_share(o, max_rows(o.batch, s.dp), 1.0 / s.tensor_ranks(), &own,
                             true);  // typed, as bin/tensor3d
  w.gemm_rows = max_rows(o.batch, s.dp * s.depth);  // the depth axis splits the rows
  w.loaded_rows = w.gemm_rows;
  const Local3d local = tensor3d_local_elements(o.model, s);
  w.optimized_parameters = local.weights + local.vectors;
  // Weights are all-gathered over depth before the GEMMs: a rank computes with a depth's worth.
  w.gemm_parameters = w.optimized_parameters * s.depth;
  w.weights_gathered = s.depth > 1;
  // Each Linear's gathered block: inputs split over one axis, outputs (padded) over the other,
  // the axes alternating from the pixels' outer one (tensor3d_local_elements' walk).
  bool outer = true;
  for (LinearShape& l : w.gemm_linears) {
    const int in_group = outer ? s.outer : s.inner, out_group = outer ? s.inner : s.outer;
    l = {l.name, l.in / in_group, (l.out + out_group - 1) / out_group};
    outer = !outer;
  }
  w.bytes = tensor3d_volumes(
      tensor3d_layer_volumes(o.model, o.batch, s, value_wire_bytes(o), false, false), &w.calls);
  w.memory = tensor3d_memory(o, s, Overlap3d{});
  return {w};
}

void describe_grid(PlanCandidate& c, const Tensor3dGrid& grid) {
  c.set_grid(grid, tensor3d_work, grid.dp);
}

// x × y × z grids for every product above one that divides the world.
void add_grid_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) {
  const int world = base.world;
  for (int x = 1; x <= world; ++x)
    for (int y = 1; x * y <= world; ++y)
      for (int z = 1; x * y * z <= world; ++z) {
        if (x * y * z == 1 || world % (x * y * z) != 0) continue;
        add_if_accepted(out, candidate_of(base, "tensor3d", {"--tp-dims", dims_text({x, y, z})}),
                        [&](PlanCandidate& c) {
                          describe_grid(c, check_shape_divides(c.options.model, c.options.batch,
                                                          resolve_tensor3d_grid({x, y, z}, 0,
                                                                                world)));
                        });
      }
}

class Tensor3dScheme final : public Scheme {
 public:
  Tensor3dScheme() : Scheme("tensor3d", kDescription) {}
  void add_options(CLI::App& app) override {
    app.add_option("--tp-dims", tp_dims_, "the x,y,z grid: G_r (outer), G_c (inner), G_d (depth) "
                   "(default: ranks/dp,1,1)")
        ->delimiter(',')->check(non_empty())
        ->check(positive_integer_item("expected three positive integers x,y,z"));
    app.add_option("--dp", dp_, "data-parallel replicas of the grid (default: ranks / x·y·z)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_flag("--cache-weights", overlap_.cache_weights,
                 "keep each layer's gathered weights from forward for backward");
    app.add_flag("--overlap-dx", overlap_.overlap_dx,
                 "overlap the dX all-reduce with the dW GEMM");
    app.add_flag("--defer-dw-reduce", overlap_.defer_dw_reduce,
                 "finish each dW reduce-scatter during the next layer's backward");
    app.add_flag("--prefetch-weights", overlap_.prefetch_weights,
                 "all-gather the next layer's weights during this layer's compute");
  }
  void check_options(const Options&) override { check_tp_dims_3d(tp_dims_); }
  std::string check_grid(const Options& o, int ranks) override {
    shape_ = resolve_tensor3d_grid(tp_dims_, dp_, ranks);
    check_shape_divides(o.model, o.batch, shape_);
    return "tp-dims=" + shape_.dims() + ",dp=" + std::to_string(shape_.dp);
  }
  void describe(PlanCandidate& c) const override { describe_grid(c, shape_); }
  void add_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) const override {
    add_grid_candidates(out, base);
  }
  MemoryNeed memory(const Options& o, int, int) const override {
    return tensor3d_memory(o, shape_, overlap_);
  }
  int train(SchemeStart& s) override {
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) {
          return std::make_unique<Tensor3dTrainer<decltype(zero)>>(s.setup(), shape_, overlap_);
        },
        [&](const auto& trainer) {
          if (s.context.is_root()) print_report(trainer, s.options, shape_, overlap_);
        });
  }

 private:
  std::vector<int> tp_dims_;
  int dp_ = 0;
  Overlap3d overlap_;
  Tensor3dGrid shape_;
};

}  // namespace

std::unique_ptr<Scheme> make_tensor3d_scheme() { return std::make_unique<Tensor3dScheme>(); }

}  // namespace mlps

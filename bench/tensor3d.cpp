// bin/tensor3d: AxoNN-style 3D tensor parallelism (G_r × G_c × G_d = --tp-dims x,y,z), every
// Linear's weight block depth-sharded and all-gathered when used, optionally × --dp
// data-parallel replicas (AxoNN 4D). At the end rank 0 prints each layer's analytic collective
// volumes per training step (with --inference, per forward pass; with
// --checkpoint-activations, the recompute's too) as nccl-tests size and ring bytes sent, the
// totals beside the measured ones, and the memory per rank.
#include <cstdio>

#include "src/cli_validators.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/memory/scheme_memory.h"
#include "src/schemes/tensor3d/tensor3d_trainer.h"
#include "src/schemes/tensor3d/volumes_3d.h"

namespace mlps {
namespace {

template <typename T>
void print_report(const Tensor3dTrainer<T>& trainer, const Options& o, const Shape3d& shape,
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

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  using namespace mlps;
  std::vector<int> tp_dims;
  int dp = 0;
  Overlap3d overlap;
  Shape3d shape;
  SchemeDefinition scheme;
  scheme.name = "tensor3d";
  scheme.description = "AxoNN 3D tensor parallelism: an x (outer) × y (inner) × z (depth) grid "
                       "per Linear, optionally x --dp data-parallel replicas.";
  scheme.add_options = [&](CLI::App& app) {
    app.add_option("--tp-dims", tp_dims, "the x,y,z grid: G_r (outer), G_c (inner), G_d (depth) "
                   "(default: ranks/dp,1,1)")
        ->delimiter(',')->check(non_empty())
        ->check(positive_integer_item("expected three positive integers x,y,z"));
    app.add_option("--dp", dp, "data-parallel replicas of the grid (default: ranks / x·y·z)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_flag("--cache-weights", overlap.cache_weights,
                 "keep each layer's gathered weights from forward for backward");
    app.add_flag("--overlap-dx", overlap.overlap_dx,
                 "overlap the dX all-reduce with the dW GEMM");
    app.add_flag("--defer-dw-reduce", overlap.defer_dw_reduce,
                 "finish each dW reduce-scatter during the next layer's backward");
    app.add_flag("--prefetch-weights", overlap.prefetch_weights,
                 "all-gather the next layer's weights during this layer's compute");
  };
  scheme.check_options = [&](const Options&) { check_tp_dims_3d(tp_dims); };
  scheme.check_grid = [&](const Options& o, int ranks) {
    shape = resolve_shape_3d(tp_dims, dp, ranks);
    check_shape_divides(o.model, o.batch, shape);
    return "tp-dims=" + shape.dims() + ",dp=" + std::to_string(shape.dp);
  };
  scheme.describe = [&](PlanCandidate& c) {
    c.tensor3d = shape;
    c.replicas = shape.dp;
  };
  scheme.memory = [&](const Options& o, int, int) { return tensor3d_memory(o, shape, overlap); };
  scheme.train = [&](SchemeStart& s) {
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) {
          return std::make_unique<Tensor3dTrainer<decltype(zero)>>(s.setup(), shape, overlap);
        },
        [&](const auto& trainer) {
          if (s.context.is_root()) print_report(trainer, s.options, shape, overlap);
        });
  };
  return scheme_main(argc, argv, scheme);
}

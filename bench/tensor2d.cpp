// bin/tensor2d: 2D tensor parallelism (SUMMA / Optimus): every Linear a SUMMA product on a
// q × q grid with broadcasts along grid rows and columns, LayerNorm statistics reduced over the
// grid row; optionally × --dp data-parallel replicas. At the end rank 0 prints each collective's
// analytic bytes per rank and iteration beside the measured ones, and the memory per rank.
#include <cstdio>

#include "src/cli_validators.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/memory/scheme_memory.h"
#include "src/schemes/tensor2d/tensor2d_trainer.h"
#include "src/schemes/tensor2d/volumes_2d.h"

namespace mlps {
namespace {

template <typename T>
void print_report(const Tensor2dTrainer<T>& trainer, const Options& o, const GridShape& shape) {
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

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  using namespace mlps;
  std::vector<int> tp_dims;
  int dp = 0;
  GridShape shape;
  SchemeDefinition scheme;
  scheme.name = "tensor2d";
  scheme.description = "2D tensor parallelism (SUMMA): every Linear a SUMMA product on a q x q "
                       "grid, optionally x --dp data-parallel replicas.";
  scheme.add_options = [&](CLI::App& app) {
    app.add_option("--tp-dims", tp_dims, "the q,q grid (square; default: the square root of the "
                   "ranks per replica)")
        ->delimiter(',')->check(non_empty())
        ->check(positive_integer_item("expected two positive integers q,q"));
    app.add_option("--dp", dp, "data-parallel replicas of the grid (default: ranks / q²)")
        ->check(CLI::Range(1, 1 << 20));
  };
  scheme.check_options = [&](const Options&) { check_tp_dims_2d(tp_dims); };
  scheme.check_grid = [&](const Options& o, int ranks) {
    shape = resolve_grid_shape(tp_dims, dp, ranks);
    check_grid_fits(o.model, o.batch, shape);
    return "tp-dims=" + std::to_string(shape.q) + "," + std::to_string(shape.q) +
           ",dp=" + std::to_string(shape.dp);
  };
  scheme.describe = [&](PlanCandidate& c) {
    c.tensor2d = shape;
    c.replicas = shape.dp;
  };
  scheme.memory = [&](const Options& o, int, int) { return tensor2d_memory(o, shape); };
  scheme.train = [&](SchemeStart& s) {
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) { return std::make_unique<Tensor2dTrainer<decltype(zero)>>(s.setup(), shape); },
        [&](const auto& trainer) {
          if (s.context.is_root()) print_report(trainer, s.options, shape);
        });
  };
  return scheme_main(argc, argv, scheme);
}

// bin/serial: the whole model on one process, the reference every scheme is checked against.
#include <cstdio>
#include <memory>

#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/memory/scheme_memory.h"
#include "src/model/fused_weight_update.h"
#include "src/schemes/serial/serial_trainer.h"

int main(int argc, char** argv) {
  using namespace mlps;
  bool fused_update = false;
  SchemeDefinition scheme;
  scheme.name = "serial";
  scheme.description = "Train the tutorial's FC_Net serially on one process (the reference for "
                       "every parallel scheme).";
  scheme.add_options = [&](CLI::App& app) {
    app.add_flag("--fused-update", fused_update, "update each Linear's weights during backward, "
                 "a cache-sized block of dW rows at a time (CPU, fp32 or fp64); the optimizer "
                 "phase then updates only the biases and LayerNorms");
  };
  scheme.check_grid = [&](const Options& o, int ranks) {
    if (ranks != 1)
      throw InputError("bin/serial runs on exactly one rank, not " + std::to_string(ranks) +
                       " (use bin/data for several)");
    if (fused_update &&
        !fused_update_applies(resolve_device(o.device), storage_format(o.precision)))
      throw InputError("--fused-update needs the CPU backend and --precision fp32 or fp64");
    return std::string("1 rank");
  };
  scheme.memory = [&](const Options& o, int, int) { return serial_memory(o, fused_update); };
  scheme.train = [&](SchemeStart& s) {
    // bf16 and fp16 in 16-bit buffers (typed storage).
    return train_in_precision<true>(s, [&](auto zero) {
      const Options& o = s.options;
      auto trainer = std::make_unique<SerialTrainer<decltype(zero)>>(
          s.device, o.model, o.optimizer, o.seed, o.batch, fused_update);
      if (trainer->fused_update() && !o.inference)
        std::printf("weights updated during backward, a block of dW rows at a time "
                    "(--fused-update)\n");
      return trainer;
    });
  };
  return scheme_main(argc, argv, scheme);
}

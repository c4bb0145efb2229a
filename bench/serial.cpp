// bin/serial: the whole model on one process, the reference every scheme is checked against.
#include <cstdio>
#include <memory>

#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/memory/scheme_memory.h"
#include "src/schemes/serial_trainer.h"

int main(int argc, char** argv) {
  using namespace mlps;
  bool no_fused_update = false;
  SchemeDefinition scheme;
  scheme.name = "serial";
  scheme.description = "Train the tutorial's FC_Net serially on one process (the reference for "
                       "every parallel scheme).";
  scheme.add_options = [&](CLI::App& app) {
    app.add_flag("--no-fused-update", no_fused_update, "update the weights in the optimizer "
                 "phase from whole gradients (by default, on the CPU in full precision, each "
                 "Linear updates its weights during backward, a cache-sized block of dW rows at "
                 "a time, and the optimizer phase updates the biases and LayerNorms)");
  };
  scheme.check_grid = [](const Options&, int ranks) {
    if (ranks != 1)
      throw InputError("bin/serial runs on exactly one rank, not " + std::to_string(ranks) +
                       " (use bin/data for several)");
    return std::string("1 rank");
  };
  scheme.memory = [&](const Options& o, int, int) { return serial_memory(o, !no_fused_update); };
  scheme.train = [&](SchemeStart& s) {
    return train_in_precision(s, [&](auto zero) {
      const Options& o = s.options;
      auto trainer = std::make_unique<SerialTrainer<decltype(zero)>>(
          s.device, o.model, o.optimizer, o.seed, o.batch, !no_fused_update);
      if (trainer->fused_update())
        std::printf("weights updated during backward, a block of dW rows at a time "
                    "(--no-fused-update: in the optimizer phase)\n");
      return trainer;
    });
  };
  return scheme_main(argc, argv, scheme);
}

// bin/serial: the whole model on one process, the reference every scheme is checked against.
#include <memory>

#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/memory/scheme_memory.h"
#include "src/schemes/serial_trainer.h"

int main(int argc, char** argv) {
  using namespace mlps;
  SchemeDefinition scheme;
  scheme.name = "serial";
  scheme.description = "Train the tutorial's FC_Net serially on one process (the reference for "
                       "every parallel scheme).";
  scheme.check_grid = [](const Options&, int ranks) {
    if (ranks != 1)
      throw InputError("bin/serial runs on exactly one rank, not " + std::to_string(ranks) +
                       " (use bin/data for several)");
    return std::string("1 rank");
  };
  scheme.memory = [](const Options& o, int, int) { return serial_memory(o); };
  scheme.train = [](SchemeStart& s) {
    return train_in_precision(s, [&](auto zero) {
      const Options& o = s.options;
      return std::make_unique<SerialTrainer<decltype(zero)>>(s.device, o.model, o.optimizer,
                                                             o.seed, o.batch);
    });
  };
  return scheme_main(argc, argv, scheme);
}

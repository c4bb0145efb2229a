// bin/serial: the whole model on one process, the reference every scheme is checked against.
#include "src/schemes/serial/serial_scheme.h"

#include <cstdio>
#include <memory>

#include "src/base/errors.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/model/fused_weight_update.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/rank_work.h"
#include "src/schemes/serial/serial_memory.h"
#include "src/schemes/serial/serial_trainer.h"

namespace mlps {
namespace {

// The first line of bin/serial's --help.
constexpr const char* kDescription =
    "Train the tutorial's FC_Net serially on one process (the reference for "
    "every parallel scheme).";


// The whole model on the one rank.
std::vector<RankWork> serial_work(const PlanCandidate& c, SchemeShape& shape) {
  RankWork w = replica_share(c.options, static_cast<double>(c.options.batch), 1.0, nullptr,
                             true);  // typed 16-bit storage, as bin/serial trains
  w.optimized_parameters = static_cast<double>(parameter_count(c.options.model));
  w.gemm_parameters = w.optimized_parameters;
  w.memory = serial_memory(c.options, false);
  shape.axes = {{"data", 1}};
  return {w};
}

void add_grid_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) {
  if (base.world != 1) return;
  PlanCandidate c = candidate_of(base, "serial", {});
  c.work = serial_work;
  out.push_back(c);
}

class SerialScheme final : public Scheme {
 public:
  SerialScheme() : Scheme("serial", kDescription) {}
  void add_options(CLI::App& app) override {
    app.add_flag("--fused-update", fused_update_, "update each Linear's weights during backward, "
                 "a cache-sized block of dW rows at a time (CPU, fp32 or fp64); the optimizer "
                 "phase then updates only the biases and LayerNorms");
  }
  std::string check_grid(const Options& o, int ranks) override {
    if (ranks != 1)
      throw InputError("bin/serial runs on exactly one rank, not " + std::to_string(ranks) +
                       " (use bin/data for several)");
    if (fused_update_ &&
        !fused_update_applies(resolve_device(o.device), storage_format(o.precision)))
      throw InputError("--fused-update needs the CPU backend and --precision fp32 or fp64");
    return std::string("1 rank");
  }
  void describe(PlanCandidate& c) const override { c.work = serial_work; }
  void add_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) const override {
    add_grid_candidates(out, base);
  }
  MemoryNeed memory(const Options& o, int, int) const override {
    return serial_memory(o, fused_update_);
  }
  int train(SchemeStart& s) override {
    // bf16 and fp16 in 16-bit buffers (typed storage).
    return train_in_precision<true>(s, [&](auto zero) {
      const Options& o = s.options;
      auto trainer = std::make_unique<SerialTrainer<decltype(zero)>>(
          s.device, o.model, o.optimizer, o.seed, o.batch, fused_update_);
      if (trainer->fused_update() && !o.inference)
        std::printf("weights updated during backward, a block of dW rows at a time "
                    "(--fused-update)\n");
      return trainer;
    });
  }

 private:
  bool fused_update_ = false;
};

}  // namespace

std::unique_ptr<Scheme> make_serial_scheme() { return std::make_unique<SerialScheme>(); }

}  // namespace mlps

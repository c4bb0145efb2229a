#pragma once
// Typed mixed precision against the emulation it replaces, for any scheme's trainer: five steps
// on the synthetic data, then the loss curve, the final weights (rank 0's gather), the peak
// memory and the last step's traffic. Typed training must equal the emulation bit for bit, in
// less memory, sending the same bytes in the same calls.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/data/batch_loader.h"
#include "src/data/dataset.h"
#include "src/data/shuffle.h"
#include "src/schemes/scheme_trainer.h"

namespace mlps::testing {

struct Trained {
  std::vector<double> losses;
  std::vector<NamedTensor> parameters;  // rank 0's
  size_t peak_bytes = 0;
  std::string storage;
  std::map<std::string, CommTotals> comm;  // the last step's
};

// Five steps of `trainer` on global batches of `batch` rows of `image_size`² images.
template <typename Trainer>
Trained train_five_steps(Trainer& trainer, int64_t batch, int64_t image_size) {
  PhaseTimer timer(trainer.device());
  const auto data = open_dataset("synthetic", 7);
  const auto order = epoch_order(data->size(Split::train), 7, 0);
  const BatchSlice slice = trainer.batch_slice(batch);
  Trained out;
  for (int64_t it = 0; it < 5; ++it) {
    timer.begin_iteration();
    const HostBatch rows = load_batch(*data, Split::train, order, it * batch + slice.first,
                                      slice.count, static_cast<int>(image_size));
    trainer.train_step(rows, batch, timer);
    out.losses.push_back(trainer.step_loss());
    timer.end_iteration();
    out.comm = trainer.take_comm_totals();
  }
  out.parameters = trainer.gather_parameters();
  out.peak_bytes = trainer.device().peak_bytes();
  out.storage = trainer.storage();
  return out;
}

// The tests' setup: `model` trained by Adam (lr 1e-3) from seed 7 on global batches of `batch`
// rows, on the CPU in `storage`.
inline TrainerSetup adam_setup(StorageFormat storage, const ModelConfig& model, int64_t batch) {
  TrainerSetup setup;
  setup.device = DeviceConfig(DeviceKind::cpu, storage);
  setup.model = model;
  setup.optimizer.kind = OptimizerKind::adam;
  setup.optimizer.lr = 1e-3;
  setup.seed = 7;
  setup.global_batch = batch;
  return setup;
}

inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

inline void expect_same_training(const Trained& emulated, const Trained& typed,
                                 const std::string& what) {
  EXPECT_EQ(emulated.storage, "emulated") << what;
  EXPECT_EQ(typed.storage, "typed") << what;
  EXPECT_TRUE(same_bits(typed.losses, emulated.losses)) << what << ": loss curves differ";
  ASSERT_EQ(typed.parameters.size(), emulated.parameters.size()) << what;
  for (size_t t = 0; t < typed.parameters.size(); ++t)
    EXPECT_TRUE(same_bits(typed.parameters[t].values, emulated.parameters[t].values))
        << what << ": final " << typed.parameters[t].name << " differs";
  EXPECT_LT(typed.peak_bytes, emulated.peak_bytes) << what;
  ASSERT_EQ(typed.comm.size(), emulated.comm.size()) << what;
  for (const auto& [kind, totals] : emulated.comm) {
    EXPECT_EQ(typed.comm.at(kind).bytes, totals.bytes) << what << ": " << kind;
    EXPECT_EQ(typed.comm.at(kind).calls, totals.calls) << what << ": " << kind;
  }
}

// train(T{}, format) trains on T = float (the emulation of format) or S (typed): they must
// train alike. `what` names the case; the format is added.
template <typename S, typename Train>
void expect_typed_equals_emulated(Train train, const std::string& what) {
  const StorageFormat format = format_of<S>();
  expect_same_training(train(float{}, format), train(S{}, format),
                       what + (format == StorageFormat::bf16 ? " bf16" : " fp16"));
}

// Five steps of `model` on batches of `batch` rows, with Adam, of the trainer
// make(T{}, setup) builds (a unique_ptr): typed bf16 and then fp16 against their emulations.
template <typename Make>
void expect_five_steps_typed_equal_emulated(const ModelConfig& model, int64_t batch,
                                            const std::string& what, Make make) {
  auto train = [&](auto zero, StorageFormat storage) {
    const auto trainer = make(zero, adam_setup(storage, model, batch));
    return train_five_steps(*trainer, batch, model.image_size);
  };
  expect_typed_equals_emulated<bf16>(train, what);
  expect_typed_equals_emulated<fp16>(train, what);
}

}  // namespace mlps::testing

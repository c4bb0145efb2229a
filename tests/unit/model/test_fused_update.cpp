// The weight update fused into backward (FusedWeightUpdate): the optimizer applied a block at a
// time gives the whole-tensor step, and serial training with it gives serial training without.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "src/data/dataset.h"
#include "src/data/shuffle.h"
#include "src/optim/optimizer.h"
#include "src/schemes/serial/serial_trainer.h"
#include "tests/model_shapes.h"

namespace mlps {
namespace {

// One tensor of n elements with a gradient, updated twice: whole by step(), or in blocks by
// apply_block() after open_step().
template <typename T>
std::vector<T> updated(OptimizerKind kind, int64_t n, int64_t block) {
  Device device(DeviceKind::cpu);
  OptimizerConfig config;
  config.kind = kind;
  Optimizer<T> optimizer(device, config, MPI_COMM_SELF);
  Buffer<T> value(device, n), grad(device, n);
  std::vector<T> v(n), g(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(std::sin(0.1 * static_cast<double>(i)));
    g[i] = static_cast<T>(std::cos(0.37 * static_cast<double>(i)));
  }
  value.upload(v);
  grad.upload(g);
  optimizer.add(value.data(), grad.data(), n);
  if (block > 0) optimizer.enable_fused_update(block);
  for (int step = 0; step < 3; ++step) {
    if (block > 0) {
      optimizer.open_step();
      for (int64_t first = 0; first < n; first += block) {
        const int64_t count = std::min(block, n - first);
        std::copy(g.begin() + first, g.begin() + first + count, optimizer.block());
        optimizer.apply_block(value.data(), first, count);
      }
    }
    EXPECT_TRUE(optimizer.step());
  }
  EXPECT_EQ(optimizer.steps_taken(), 3);
  return value.download();
}

TEST(FusedUpdate, BlocksGiveTheWholeStepBitForBit) {
  for (OptimizerKind kind : {OptimizerKind::adam, OptimizerKind::sgd}) {
    EXPECT_EQ(updated<float>(kind, 1000, 64), updated<float>(kind, 1000, 0));
    EXPECT_EQ(updated<double>(kind, 1000, 333), updated<double>(kind, 1000, 0));
  }
}

TEST(FusedUpdate, PartOfATensorOrNoOpenStepIsAnError) {
  Device device(DeviceKind::cpu);
  Optimizer<float> optimizer(device, OptimizerConfig{}, MPI_COMM_SELF);
  Buffer<float> value(device, 100), grad(device, 100);
  value.zero();
  grad.zero();
  optimizer.add(value.data(), grad.data(), 100);
  optimizer.enable_fused_update(64);
  EXPECT_THROW(optimizer.apply_block(value.data(), 0, 64), std::logic_error);  // no open step
  optimizer.open_step();
  EXPECT_THROW(optimizer.apply_block(grad.data(), 0, 64), std::logic_error);  // not registered
  EXPECT_THROW(optimizer.apply_block(value.data(), 0, 65), std::logic_error);  // over the block
  optimizer.apply_block(value.data(), 0, 64);
  EXPECT_THROW(optimizer.step(), std::logic_error);  // elements 64..99 never updated
}

TEST(FusedUpdate, SixteenBitStorageIsNotFused) {
  const ModelConfig config = model_shape(4, 8, 1);
  SerialTrainer<float> bf16(DeviceConfig(DeviceKind::cpu, StorageFormat::bf16), config,
                            OptimizerConfig{}, 1, 4, true);
  SerialTrainer<float> fp32(DeviceKind::cpu, config, OptimizerConfig{}, 1, 4, true);
  EXPECT_FALSE(bf16.fused_update());
  EXPECT_TRUE(fp32.fused_update());
  Device device(DeviceConfig(DeviceKind::cpu, StorageFormat::bf16));
  Optimizer<float> mixed(device, OptimizerConfig{}, MPI_COMM_SELF);
  EXPECT_THROW(mixed.enable_fused_update(64), std::logic_error);
}

// Trains `steps` steps, fused or not, and returns the losses and the final parameters.
template <typename T>
std::pair<std::vector<double>, std::vector<double>> train(const ModelConfig& config,
                                                          OptimizerKind kind, bool fused) {
  OptimizerConfig optimizer;
  optimizer.kind = kind;
  const int64_t batch = 8, steps = 4;
  SerialTrainer<T> trainer(DeviceKind::cpu, config, optimizer, 5, batch, fused);
  EXPECT_EQ(trainer.fused_update(), fused);
  const auto data = open_dataset("synthetic", 3);
  const auto order = epoch_order(data->size(Split::train), 7, 0);
  PhaseTimer timer(trainer.device());
  std::vector<double> losses, values;
  for (int64_t it = 0; it < steps; ++it) {
    const HostBatch rows =
        load_batch(*data, Split::train, order, it * batch, batch, config.image_size);
    timer.begin_iteration();
    trainer.train_step(rows, batch, timer);
    losses.push_back(trainer.step_loss());
    timer.end_iteration();
  }
  for (const auto& tensor : trainer.gather_parameters())
    values.insert(values.end(), tensor.values.begin(), tensor.values.end());
  return {losses, values};
}

// Each Linear of H 256 and F 1024 spans two fp64 blocks (1 MiB each), so the block walk runs.
TEST(FusedUpdate, SerialTrainingFusedEqualsUnfused) {
  for (bool checkpoint : {false, true})
    for (BlockKind block : {BlockKind::residual_mlp, BlockKind::plain})
      for (OptimizerKind kind : {OptimizerKind::adam, OptimizerKind::sgd}) {
        ModelConfig config = model_shape(16, 256, 2, 4, block);
        config.checkpoint_activations = checkpoint;
        const auto [fused_losses, fused] = train<double>(config, kind, true);
        const auto [losses, plain] = train<double>(config, kind, false);
        ASSERT_EQ(fused.size(), plain.size());
        double scale = 0, worst = 0;
        for (size_t i = 0; i < plain.size(); ++i) {
          scale = std::max(scale, std::abs(plain[i]));
          worst = std::max(worst, std::abs(fused[i] - plain[i]));
        }
        EXPECT_LE(worst, 1e-12 * scale) << "checkpoint " << checkpoint << ", kind "
                                        << static_cast<int>(kind);
        for (size_t i = 0; i < losses.size(); ++i)
          EXPECT_NEAR(fused_losses[i], losses[i], 1e-12 * std::abs(losses[i]));
      }
  // fp32: the same up to rounding.
  const ModelConfig config = model_shape(16, 256, 1);
  const auto [fused_losses, fused] = train<float>(config, OptimizerKind::adam, true);
  const auto [losses, plain] = train<float>(config, OptimizerKind::adam, false);
  for (size_t i = 0; i < losses.size(); ++i)
    EXPECT_NEAR(fused_losses[i], losses[i], 1e-5 * std::abs(losses[i]));
}

}  // namespace
}  // namespace mlps

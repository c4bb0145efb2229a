// Mixed precision and activation checkpointing on the serial model: the loss scaler's
// skip / back-off / growth, the optimizer skipping an overflowing step and keeping fp32 master
// weights, checkpointing bit-identical to storing activations, and a forward-only evaluation
// equal to the forward pass of a training step on the same weights.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "src/data/dataset.h"
#include "src/data/shuffle.h"
#include "src/optim/loss_scaler.h"
#include "src/optim/optimizer.h"
#include "src/schemes/serial/serial_trainer.h"
#include "tests/model_shapes.h"

namespace mlps {
namespace {

TEST(LossScaler, OverflowSkipsAndBacksOffThenCleanStepsGrowTheScale) {
  LossScaler scaler({/*initial*/ 1024.0, /*growth*/ 2.0, /*backoff*/ 0.5, /*interval*/ 3});
  EXPECT_TRUE(scaler.update(false));
  EXPECT_FALSE(scaler.update(true));  // overflow: skip, halve, restart the clean count
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_TRUE(scaler.update(false));
  EXPECT_TRUE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 512.0);  // two clean steps: not yet
  EXPECT_TRUE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 1024.0);  // the third in a row doubles it
  EXPECT_FALSE(scaler.update(true));
  EXPECT_FALSE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 256.0);
  EXPECT_EQ(scaler.skipped_steps(), 3);
}

TEST(LossScaler, DefaultsAreTheIssuesFp16Policy) {
  LossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0);
  for (int i = 0; i < 1999; ++i) scaler.update(false);
  EXPECT_EQ(scaler.scale(), 65536.0);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 131072.0);
}

TEST(MixedPrecisionOptimizer, Fp16SkipsAStepWithAnInfGradientAndUnscalesTheNext) {
  Device device(DeviceConfig(DeviceKind::cpu, StorageFormat::fp16));
  OptimizerConfig config;
  config.kind = OptimizerKind::sgd;
  config.lr = 0.5;
  Optimizer<float> optimizer(device, config, MPI_COMM_SELF);
  EXPECT_EQ(device.loss_scale(), 65536.0);
  // 1 + 2^-12 is not an fp16 value: the model's copy is rounded, the master keeps it.
  std::vector<float> value{1.0f + 1.0f / 4096, 2.0f}, grad{0, 0};
  optimizer.add(value.data(), grad.data(), 2);
  EXPECT_EQ(value[0], 1.0f);
  grad = {std::numeric_limits<float>::infinity(), 1.0f};
  EXPECT_FALSE(optimizer.step());
  EXPECT_EQ(value[0], 1.0f);
  EXPECT_EQ(value[1], 2.0f);
  EXPECT_EQ(device.loss_scale(), 32768.0);
  EXPECT_EQ(optimizer.steps_taken(), 0);
  // Gradients as the backward pass leaves them: scaled by the loss scale of that pass.
  grad = {0.0f, 32768.0f * 0.25f};
  EXPECT_TRUE(optimizer.step());
  EXPECT_EQ(value[1], 2.0f - 0.5f * 0.25f);
  // The master still holds 1 + 2^-12 (fp16 spacing at 1 is 2^-10): a step of 3·2^-12 reaches
  // 1 + 2^-10 exactly, which a model copy without the master (still 1) would not.
  grad = {-3.0f * 32768.0f / 2048, 0.0f};  // −3·2^-11 unscaled; lr 0.5 → +3·2^-12
  EXPECT_TRUE(optimizer.step());
  EXPECT_EQ(value[0], 1.0f + 1.0f / 1024);
}

TEST(MixedPrecisionOptimizer, NaNGradientOnlyInSomeTensorStillSkipsEverything) {
  Device device(DeviceConfig(DeviceKind::cpu, StorageFormat::fp16));
  Optimizer<float> optimizer(device, OptimizerConfig{}, MPI_COMM_SELF);
  std::vector<float> a{1, 1}, ga{1, 1}, b{1}, gb{std::nanf("")};
  optimizer.add(a.data(), ga.data(), 2);
  optimizer.add(b.data(), gb.data(), 1);
  EXPECT_FALSE(optimizer.step());
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[1], 1.0f);
}

// zero_gradients_after_step: a step that updates zeroes every gradient and says so; one that
// loss scaling skips leaves them (the next backward must overwrite), and so does the first.
TEST(ZeroingOptimizer, AStepZeroesTheGradientsASkippedOneKeepsThem) {
  Device device(DeviceConfig(DeviceKind::cpu, StorageFormat::fp16));
  Optimizer<float> optimizer(device, OptimizerConfig{}, MPI_COMM_SELF);
  std::vector<float> value{1, 2}, grad{std::numeric_limits<float>::infinity(), 4};
  optimizer.add(value.data(), grad.data(), 2);
  optimizer.zero_gradients_after_step();
  EXPECT_FALSE(optimizer.gradients_zeroed());
  EXPECT_FALSE(optimizer.step());  // inf: skipped
  EXPECT_FALSE(optimizer.gradients_zeroed());
  EXPECT_EQ(grad[1], 4.0f);
  grad = {1000, -1000};
  EXPECT_TRUE(optimizer.step());
  EXPECT_TRUE(optimizer.gradients_zeroed());
  EXPECT_EQ(grad, (std::vector<float>{0, 0}));
  EXPECT_NE(value[1], 2.0f);
  Device full(DeviceKind::cpu);  // fp16 storage refuses the fused update for its own reason
  Optimizer<float> fused(full, OptimizerConfig{}, MPI_COMM_SELF);
  fused.zero_gradients_after_step();
  EXPECT_THROW(fused.enable_fused_update(64), std::logic_error);
}

ModelConfig small_model(bool checkpoint) {
  ModelConfig c = model_shape(6, 16, 3, 2);
  c.checkpoint_activations = checkpoint;
  return c;
}

// Trains a few steps and returns every loss and every final parameter value.
template <typename T>
std::vector<T> train_a_little(const ModelConfig& config, size_t* peak_bytes = nullptr,
                              StorageFormat storage = StorageFormat::full) {
  const auto data = open_dataset("synthetic", 3);
  SerialTrainer<T> trainer(DeviceConfig(DeviceKind::cpu, storage), config, OptimizerConfig{}, 3, 8);
  PhaseTimer timer(trainer.device());
  std::vector<T> out;
  const auto order = epoch_order(data->size(Split::train), 3, 0);
  for (int64_t it = 0; it < 4; ++it) {
    timer.begin_iteration();
    const HostBatch batch = load_batch(*data, Split::train, order, it * 8, 8, 6);
    trainer.train_step(batch, 8, timer);
    out.push_back(static_cast<T>(trainer.step_loss()));
    timer.end_iteration();
  }
  for (const auto& t : trainer.gather_parameters())
    for (double v : t.values) out.push_back(static_cast<T>(v));
  if (peak_bytes) *peak_bytes = trainer.device().peak_bytes();
  return out;
}

template <typename T>
void expect_checkpointing_bit_identical(StorageFormat storage = StorageFormat::full) {
  size_t peak_stored = 0, peak_checkpointed = 0;
  const auto stored = train_a_little<T>(small_model(false), &peak_stored, storage);
  const auto checkpointed = train_a_little<T>(small_model(true), &peak_checkpointed, storage);
  ASSERT_EQ(stored.size(), checkpointed.size());
  for (size_t i = 0; i < stored.size(); ++i) ASSERT_EQ(stored[i], checkpointed[i]) << "item " << i;
  EXPECT_LT(peak_checkpointed, peak_stored);
}

TEST(ActivationCheckpointing, BitIdenticalInFp64) { expect_checkpointing_bit_identical<double>(); }
TEST(ActivationCheckpointing, BitIdenticalInFp32) { expect_checkpointing_bit_identical<float>(); }
TEST(ActivationCheckpointing, BitIdenticalInBf16) {
  expect_checkpointing_bit_identical<float>(StorageFormat::bf16);
}

TEST(Inference, EvaluateEqualsTheForwardPassOfATrainingStep) {
  const auto data = open_dataset("synthetic", 5);
  SerialTrainer<double> trainer(DeviceKind::cpu, small_model(false), OptimizerConfig{}, 5, 8);
  PhaseTimer timer(trainer.device());
  const HostBatch batch = load_batch_range(*data, Split::train, 0, 8, 6);
  const Evaluation inference = trainer.evaluate(batch, 8);
  timer.begin_iteration();
  trainer.train_step(batch, 8, timer);
  const double training_loss = trainer.step_loss();  // loss before the update
  timer.end_iteration();
  EXPECT_EQ(inference.loss_sum / 8, training_loss);
  EXPECT_GE(inference.correct, 0);
  EXPECT_LE(inference.correct, 8);
}

}  // namespace
}  // namespace mlps

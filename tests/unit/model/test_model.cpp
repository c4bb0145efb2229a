// The serial model: parameter counts, shard-wise initialisation, learning on synthetic data,
// and fp32 tracking fp64.
#include <gtest/gtest.h>

#include <cmath>

#include "src/data/dataset.h"
#include "src/data/shuffle.h"
#include "src/model/serial_net.h"
#include "src/schemes/serial/serial_trainer.h"
#include "tests/model_shapes.h"

namespace mlps {
namespace {

TEST(ModelShape, TutorialConfigHasTheTutorialParameterCount) {
  ModelConfig tutorial;  // defaults: H 2048, L 4, S 64, F 4H
  EXPECT_EQ(parameter_count(tutorial), 142686218);
}

TEST(ModelShape, ParameterCountMatchesTheBuiltModel) {
  Device device(DeviceKind::cpu);
  for (BlockKind block : {BlockKind::residual_mlp, BlockKind::plain}) {
    const ModelConfig config = model_shape(5, 12, 3, 3, block);
    SerialNet<float> model(device, config, 2);
    EXPECT_EQ(model.parameters().element_count(), parameter_count(config));
  }
}

// --ffn-hidden: F need not be a multiple of H (Llama-2-7B's 11008 against 4096).
TEST(ModelShape, AnFfnWidthThatIsNoMultipleOfHSetsF) {
  ModelConfig config = model_shape(3, 8, 2);
  config.ffn_width = 12;
  EXPECT_EQ(config.ffn_hidden(), 12);
  // embed 9·8 + 8; per block LayerNorm 2·8, fc1 8·12 + 12, fc2 12·8 + 8; classifier 8·10 + 10.
  EXPECT_EQ(parameter_count(config), 80 + 2 * (16 + 108 + 104) + 90);
  Device device(DeviceKind::cpu);
  SerialNet<float> model(device, config, 2);
  EXPECT_EQ(model.parameters().element_count(), parameter_count(config));
  config.ffn_width = 0;  // back to ffn_mult·H
  EXPECT_EQ(config.ffn_hidden(), config.ffn_mult * 8);
}

TEST(ModelShape, ParameterTensorSizesAreTheBuiltModelsInCreationOrder) {
  Device device(DeviceKind::cpu);
  for (BlockKind block : {BlockKind::residual_mlp, BlockKind::plain}) {
    const ModelConfig config = model_shape(5, 12, 3, 3, block);
    SerialNet<float> model(device, config, 2);
    std::vector<int64_t> built;
    for (size_t i = 0; i < model.parameters().size(); ++i)
      built.push_back(model.parameters()[i].size());
    EXPECT_EQ(parameter_tensor_sizes(config), built);
  }
}

TEST(ModelShape, TrainingStepGemmFlopsAreSixTimesTheWeightCountPerSample) {
  const ModelConfig config = model_shape(4, 8, 2);
  const int64_t batch = 3;
  double flops = 0;
  for (const auto& g : training_step_gemms(config, batch)) flops += g.flops();
  int64_t weights = 0;
  for (const auto& s : linear_shapes(config)) weights += s.in * s.out;
  // 6·W·batch less the first layer's input gradient, which is never computed.
  EXPECT_DOUBLE_EQ(flops, 6.0 * weights * batch - 2.0 * batch * config.input_features() * config.hidden);
}

// Counted by hand for S 2, H 3, F 6, one residual block, batch 2, fp32 (elements, then bytes):
// forward: bias adds 15 + 30 + 15 + 50, ReLU 24, LayerNorm 22 and residual 18, loss 42, and the
// 2 int32 labels; backward: bias gradients 9 + 18 + 9 + 30, ReLU 36, LayerNorm 31 and residual
// 18, loss 40, and the labels.
TEST(ModelShape, ElementwiseBytesOfATinyStepCountedByHand) {
  const StepElementwiseBytes e = training_step_elementwise_bytes(model_shape(2, 3, 1, 2), 2, 4);
  EXPECT_DOUBLE_EQ(e.forward, 216 * 4 + 8);
  EXPECT_DOUBLE_EQ(e.backward, 191 * 4 + 8);
}

TEST(Initialisation, AShardEqualsTheSameBlockOfTheWholeTensor) {
  const int64_t rows = 7, cols = 9;
  std::vector<double> whole(rows * cols), shard(3 * 4);
  fill_initial_shard(whole.data(), cols, 5, 4, InitKind::uniform_fan_in, cols, 0, rows, 0, cols);
  fill_initial_shard(shard.data(), 4, 5, 4, InitKind::uniform_fan_in, cols, 2, 3, 5, 4);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(shard[r * 4 + c], whole[(r + 2) * cols + c + 5]);
  const double bound = 1.0 / std::sqrt(static_cast<double>(cols));
  for (double v : whole) EXPECT_LE(std::abs(v), bound);
}

TEST(Initialisation, TensorsAndSeedsDiffer) {
  EXPECT_NE(initial_value(1, 0, InitKind::uniform_fan_in, 4, 0, 0),
            initial_value(1, 1, InitKind::uniform_fan_in, 4, 0, 0));
  EXPECT_NE(initial_value(1, 0, InitKind::uniform_fan_in, 4, 0, 0),
            initial_value(2, 0, InitKind::uniform_fan_in, 4, 0, 0));
  EXPECT_EQ(initial_value(1, 0, InitKind::ones, 4, 3, 3), 1.0);
  EXPECT_EQ(initial_value(1, 0, InitKind::zeros, 4, 3, 3), 0.0);
}

// Trains `iterations` steps on synthetic data and returns test accuracy on 500 samples.
template <typename T>
double train_and_evaluate(SerialTrainer<T>& trainer, const Dataset& data, int64_t iterations,
                          int64_t batch, int image_size, std::vector<double>* losses = nullptr) {
  PhaseTimer timer(trainer.device());
  const auto order = epoch_order(data.size(Split::train), 7, 0);
  for (int64_t it = 0; it < iterations; ++it) {
    const HostBatch rows = load_batch(data, Split::train, order, it * batch, batch, image_size);
    timer.begin_iteration();
    trainer.train_step(rows, batch, timer);
    const double loss = trainer.step_loss();
    timer.end_iteration();
    if (losses) losses->push_back(loss);
  }
  int64_t correct = 0;
  for (int64_t first = 0; first < 500; first += batch) {
    const int64_t n = std::min<int64_t>(batch, 500 - first);
    correct += trainer.evaluate(load_batch_range(data, Split::test, first, n, image_size), n).correct;
  }
  return static_cast<double>(correct) / 500.0;
}

TEST(Training, SyntheticDataIsLearnedWellAboveChance) {
  const auto data = open_dataset("synthetic", 3);
  const ModelConfig config = model_shape(16, 32, 1);
  OptimizerConfig adam;
  SerialTrainer<float> trainer(DeviceKind::cpu, config, adam, 1, 32);
  const double accuracy = train_and_evaluate(trainer, *data, 150, 32, 16);
  EXPECT_GT(accuracy, 0.6) << "chance is 0.1";
}

TEST(Training, Fp32TracksFp64OverManySteps) {
  const auto data = open_dataset("synthetic", 3);
  const ModelConfig config = model_shape(8, 16, 2);
  OptimizerConfig adam;
  SerialTrainer<float> single(DeviceKind::cpu, config, adam, 1, 16);
  SerialTrainer<double> reference(DeviceKind::cpu, config, adam, 1, 16);
  std::vector<double> loss32, loss64;
  train_and_evaluate(single, *data, 60, 16, 8, &loss32);
  train_and_evaluate(reference, *data, 60, 16, 8, &loss64);
  for (size_t i = 0; i < loss64.size(); ++i)
    EXPECT_NEAR(loss32[i], loss64[i], 1e-4 * std::abs(loss64[i])) << "iteration " << i;
  EXPECT_LT(loss64.back(), loss64.front());
}

}  // namespace
}  // namespace mlps

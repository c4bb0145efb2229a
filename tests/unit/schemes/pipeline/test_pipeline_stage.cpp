// Pipeline stages chained in one process, without MPI: exactly FcNet's loss and gradients,
// the same bits with activation checkpointing, the same logits forward-only (inference), and
// activations allocated per micro-batch through the Device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "src/model/serial_net.h"
#include "src/schemes/pipeline/pipeline_partition.h"
#include "src/schemes/pipeline/pipeline_stage.h"
#include "tests/small_pipeline_model.h"

namespace mlps {
namespace {

// The stages of `split`, each built as a rank would build it, chained in one process.
template <typename T>
struct ChainedStages {
  std::vector<std::unique_ptr<PipelineStage<T>>> stages;
  std::vector<std::vector<StageActivations<T>>> saved;  // per stage, per micro-batch
};

// Every micro-batch's forward through every stage (GPipe order: all activations kept), each
// row's loss into row_loss [rows].
template <typename T>
ChainedStages<T> chained_forward(Device& device, const ModelConfig& c, const PipelinePartition& partition,
                                 uint64_t seed, const std::vector<T>& inputs,
                                 const std::vector<int32_t>& labels, int micro_batches,
                                 Buffer<T>& row_loss) {
  const auto micro = static_cast<int64_t>(labels.size()) / micro_batches;
  ChainedStages<T> chain;
  auto& stages = chain.stages;
  auto& saved = chain.saved;
  for (int s = 0; s < partition.stages(); ++s)
    stages.push_back(std::make_unique<PipelineStage<T>>(device, c, partition.first_unit(s),
                                                        partition.end_unit(s), micro, seed));
  saved.resize(stages.size());
  for (int m = 0; m < micro_batches; ++m)
    for (size_t s = 0; s < stages.size(); ++s) {
      auto a = stages[s]->make_activations(micro);
      if (s == 0)
        device.to_device(a.input.data(), inputs.data() + m * micro * c.input_features(),
                         sizeof(T) * micro * c.input_features());
      else
        device.copy(a.input.data(), stages[s - 1]->output(saved[s - 1].back()),
                    sizeof(T) * micro * c.hidden);
      if (s + 1 == stages.size())
        device.to_device(a.labels.data(), labels.data() + m * micro, sizeof(int32_t) * micro);
      stages[s]->forward(a, micro, row_loss.data() + m * micro);
      saved[s].push_back(std::move(a));
    }
  return chain;
}

// Every micro-batch's backward through the stages in reverse, each stage's input gradient
// handed on as the previous stage's output gradient; parameter gradients accumulate over the
// micro-batches of the global batch `rows`.
template <typename T>
void chained_backward(Device& device, const ModelConfig& c,
                      std::vector<std::unique_ptr<PipelineStage<T>>>& stages,
                      std::vector<std::vector<StageActivations<T>>>& saved, int micro_batches,
                      int64_t rows) {
  const int64_t micro = rows / micro_batches;
  Buffer<T> grad(device, micro * c.hidden);
  for (int m = 0; m < micro_batches; ++m)
    for (size_t s = stages.size(); s-- > 0;) {
      if (s + 1 < stages.size())
        device.copy(saved[s][m].output_grad.data(), grad.data(), sizeof(T) * micro * c.hidden);
      stages[s]->backward(saved[s][m], micro, rows, m > 0, s == 0 ? nullptr : grad.data());
    }
}

// Stages chained in one process, micro-batch by micro-batch (activations of all micro-batches
// held at once, as GPipe does), must give FcNet's loss and gradients on the whole batch.
template <typename T>
void expect_stages_match_fcnet(BlockKind block, std::vector<int64_t> split, int micro_batches) {
  const ModelConfig c = small_model(std::accumulate(split.begin(), split.end(), int64_t{0}), block);
  const int64_t rows = 12, seed = 9;
  const PipelinePartition partition(split);
  Device device(DeviceKind::cpu);
  SerialNet<T> reference(device, c, rows);
  reference.parameters().initialise(seed);
  std::vector<T> inputs(static_cast<size_t>(rows * c.input_features()));
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = static_cast<T>(std::sin(0.37 * i));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 7) % 10);
  const double reference_loss = reference.forward(inputs.data(), labels.data(), rows);
  reference.backward(rows, rows, false);

  Buffer<T> row_loss(device, rows);
  auto [stages, saved] =
      chained_forward<T>(device, c, partition, seed, inputs, labels, micro_batches, row_loss);
  double loss = 0;
  for (T v : row_loss.download()) loss += static_cast<double>(v);
  EXPECT_NEAR(loss, reference_loss, 1e-12 * std::abs(reference_loss));
  chained_backward<T>(device, c, stages, saved, micro_batches, rows);

  // Names, ids and shapes are FcNet's; each stage's tensors equal FcNet's gradients.
  std::vector<const Parameter<T>*> ours;
  for (size_t s = 0; s < stages.size(); ++s) {
    const auto& params = stages[s]->parameters();
    ASSERT_EQ(params.size(), reference.parameters().size());
    for (const auto& p : params)
      if (p->value.size() > 0) ours.push_back(p.get());
  }
  ASSERT_EQ(ours.size(), reference.parameters().size());
  for (size_t i = 0; i < ours.size(); ++i) {
    Parameter<T>& ref = reference.parameters()[i];
    EXPECT_EQ(ours[i]->name, ref.name);
    EXPECT_EQ(ours[i]->tensor_id, ref.tensor_id);
    EXPECT_EQ(ours[i]->rows, ref.rows);
    EXPECT_EQ(ours[i]->cols, ref.cols);
    EXPECT_EQ(ours[i]->value.download(), ref.value.download()) << ref.name;
    const auto got = ours[i]->grad.download(), want = ref.grad.download();
    for (size_t k = 0; k < want.size(); ++k)
      ASSERT_NEAR(got[k], want[k], 1e-12 * (1.0 + std::abs(want[k]))) << ref.name << "[" << k << "]";
  }
}

TEST(PipelineStage, ChainedStagesComputeFcNetsLossAndGradients) {
  expect_stages_match_fcnet<double>(BlockKind::residual_mlp, {1, 2, 1}, 3);
  expect_stages_match_fcnet<double>(BlockKind::residual_mlp, {2, 1}, 1);
  expect_stages_match_fcnet<double>(BlockKind::plain, {1, 1, 1}, 4);
  expect_stages_match_fcnet<double>(BlockKind::residual_mlp, {3}, 2);
}

// The backward split into B (every micro-batch, last stage first) and W (all of them after,
// as a zero-bubble schedule may run them) gives the whole backward's gradients bit for bit:
// W computes the same dW and db from the same inputs (copied where checkpointing reuses them).
template <typename T>
void expect_split_backward_is_the_whole(BlockKind block, bool checkpointed) {
  ModelConfig c = small_model(3, block);
  c.checkpoint_activations = checkpointed;
  const int64_t rows = 12, seed = 4;
  const int micro_batches = 3;
  const int64_t micro = rows / micro_batches;
  const PipelinePartition partition({1, 2});
  Device device(DeviceKind::cpu);
  std::vector<T> inputs(static_cast<size_t>(rows * c.input_features()));
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = static_cast<T>(std::cos(0.21 * i));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 3) % 10);
  std::vector<std::vector<T>> grads[2];
  for (int split = 0; split < 2; ++split) {
    Buffer<T> row_loss(device, rows);
    auto [stages, saved] =
        chained_forward<T>(device, c, partition, seed, inputs, labels, micro_batches, row_loss);
    if (!split) {
      chained_backward<T>(device, c, stages, saved, micro_batches, rows);
    } else {
      Buffer<T> grad(device, micro * c.hidden);
      BufferPool<T> pool(device);
      std::vector<std::vector<DeferredWeightGrads<T>>> deferred(stages.size());
      for (auto& d : deferred)
        for (int m = 0; m < micro_batches; ++m) d.emplace_back(pool);
      for (int m = 0; m < micro_batches; ++m)
        for (size_t s = stages.size(); s-- > 0;) {
          if (s + 1 < stages.size())
            device.copy(saved[s][m].output_grad.data(), grad.data(), sizeof(T) * micro * c.hidden);
          stages[s]->backward(saved[s][m], micro, rows, m > 0, s == 0 ? nullptr : grad.data(),
                              &deferred[s][m]);
          EXPECT_GT(deferred[s][m].bytes(), 0u);
        }
      for (size_t s = 0; s < stages.size(); ++s)
        for (int m = 0; m < micro_batches; ++m) {
          deferred[s][m].run(m > 0);
          EXPECT_EQ(deferred[s][m].bytes(), 0u);
        }
    }
    for (auto& stage : stages)
      for (const auto& p : stage->parameters())
        if (p->grad.size() > 0) grads[split].push_back(p->grad.download());
  }
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i)
    EXPECT_EQ(grads[1][i], grads[0][i]) << "tensor " << i;
}

TEST(PipelineStage, SplitBackwardGivesTheWholeBackwardsGradients) {
  expect_split_backward_is_the_whole<double>(BlockKind::residual_mlp, false);
  expect_split_backward_is_the_whole<double>(BlockKind::residual_mlp, true);
  expect_split_backward_is_the_whole<float>(BlockKind::plain, true);
  expect_split_backward_is_the_whole<float>(BlockKind::residual_mlp, true);
}

TEST(PipelineStage, ActivationsAreAllocatedPerMicroBatchThroughTheDevice) {
  const ModelConfig c = small_model(2);
  Device device(DeviceKind::cpu);
  PipelineStage<float> stage(device, c, 2, 4, 4, 1);  // block1 and the classifier
  EXPECT_TRUE(stage.is_last());
  EXPECT_FALSE(stage.is_first());
  const size_t before = device.current_bytes();
  {
    auto a = stage.make_activations(4);
    // input, block output, logits, the block's LayerNorm output, statistics and ReLU output,
    // labels and softmax.
    const size_t h = c.hidden, f = c.ffn_hidden();
    const size_t expected = sizeof(float) * (4 * h + 4 * h + 4 * 10 + 4 * h + 2 * 4 + 4 * f + 4 * 10) +
                            sizeof(int32_t) * 4;
    EXPECT_EQ(a.bytes(), expected);
    EXPECT_EQ(device.current_bytes() - before, expected);
  }
  EXPECT_EQ(device.current_bytes(), before);
}

// Stages chained in one process (GPipe order, as above): every row's loss, every stage's
// gradients in stage order, the logits of forward(), and the logits of forward_only().
template <typename T>
struct ChainedRun {
  std::vector<T> row_loss, grads, logits, streamed_logits;
};

template <typename T>
ChainedRun<T> run_chained(const ModelConfig& c, const std::vector<int64_t>& split,
                          int micro_batches) {
  const int64_t rows = 12, micro = rows / micro_batches, seed = 5;
  const PipelinePartition partition(split);
  Device device(DeviceKind::cpu);
  std::vector<T> inputs(static_cast<size_t>(rows * c.input_features()));
  std::vector<int32_t> labels(static_cast<size_t>(rows));
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = static_cast<T>(std::cos(0.29 * i));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 3) % 10);
  ChainedRun<T> run;
  Buffer<T> row_loss(device, rows);
  auto [stages, saved] =
      chained_forward<T>(device, c, partition, seed, inputs, labels, micro_batches, row_loss);
  run.row_loss = row_loss.download();
  for (const auto& a : saved.back()) {
    const auto logits = a.outputs.back().download();
    run.logits.insert(run.logits.end(), logits.begin(), logits.end());
  }
  chained_backward<T>(device, c, stages, saved, micro_batches, rows);
  for (auto& stage : stages) {
    const auto g = Buffer<T>::view(device, stage->grads(), stage->parameter_elements()).download();
    run.grads.insert(run.grads.end(), g.begin(), g.end());
  }
  // Forward-only, micro-batch by micro-batch, through each stage's scratch.
  for (int m = 0; m < micro_batches; ++m) {
    Buffer<T> x(device, micro * c.input_features());
    device.to_device(x.data(), inputs.data() + m * micro * c.input_features(),
                     sizeof(T) * micro * c.input_features());
    for (auto& stage : stages) {
      Buffer<T> y(device, micro * stage->output_features());
      auto scratch = stage->make_forward_scratch(micro);
      stage->forward_only(x.data(), y.data(), micro, scratch);
      x = std::move(y);
    }
    const auto logits = x.download();
    run.streamed_logits.insert(run.streamed_logits.end(), logits.begin(), logits.end());
  }
  return run;
}

template <typename T>
void expect_checkpointing_bit_identical(BlockKind block, std::vector<int64_t> split,
                                        int micro_batches) {
  ModelConfig c = small_model(std::accumulate(split.begin(), split.end(), int64_t{0}), block);
  const ChainedRun<T> full = run_chained<T>(c, split, micro_batches);
  c.checkpoint_activations = true;
  const ChainedRun<T> checkpointed = run_chained<T>(c, split, micro_batches);
  EXPECT_EQ(checkpointed.row_loss, full.row_loss);
  EXPECT_EQ(checkpointed.grads, full.grads);
  EXPECT_EQ(checkpointed.logits, full.logits);
  EXPECT_EQ(full.streamed_logits, full.logits) << "forward_only differs from forward";
  EXPECT_EQ(checkpointed.streamed_logits, full.logits);
}

TEST(PipelineStage, CheckpointingGivesTheSameBitsAndForwardOnlyTheSameLogits) {
  expect_checkpointing_bit_identical<double>(BlockKind::residual_mlp, {1, 2, 1}, 3);
  expect_checkpointing_bit_identical<float>(BlockKind::residual_mlp, {2, 2}, 4);
  expect_checkpointing_bit_identical<float>(BlockKind::residual_mlp, {3}, 1);
  expect_checkpointing_bit_identical<double>(BlockKind::plain, {1, 2}, 2);
}

TEST(PipelineStage, CheckpointedMicroBatchesKeepOnlyBlockInputsAndTheBoundary) {
  ModelConfig c = small_model(3);
  c.checkpoint_activations = true;
  Device device(DeviceKind::cpu);
  const size_t h = c.hidden, f = c.ffn_hidden();
  const size_t block_set = sizeof(float) * (4 * h + 2 * 4 + 4 * f);  // LayerNorm out, stats, ReLU
  {
    PipelineStage<float> stage(device, c, 2, 5, 4, 1);  // block1, block2 and the classifier
    // One shared recompute set of 4 rows and the last block's output (the classifier's input).
    EXPECT_EQ(stage.recompute_bytes(), block_set + sizeof(float) * 4 * h);
    const size_t before = device.current_bytes();
    auto a = stage.make_activations(4);
    // input, block1's output (block2's input), logits, labels and softmax: no block internals
    // and no output of block2.
    const size_t expected = sizeof(float) * (4 * h + 4 * h + 4 * 10 + 4 * 10) + sizeof(int32_t) * 4;
    EXPECT_EQ(a.bytes(), expected);
    EXPECT_EQ(device.current_bytes() - before, expected);
  }
  {
    PipelineStage<float> stage(device, c, 0, 2, 4, 1);  // embed and block0: a middle boundary
    EXPECT_EQ(stage.recompute_bytes(), block_set);
    // images, embed output (block0's input), block0's output (sent) and its gradient.
    const size_t expected = sizeof(float) * (4 * c.input_features() + 3 * 4 * h);
    EXPECT_EQ(stage.make_activations(4).bytes(), expected);
  }
}

}  // namespace
}  // namespace mlps

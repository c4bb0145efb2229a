// bin/tensor1d's pieces that need no MPI: which Linear is split how, the shard sizes and the
// analytic volumes, and that column/row shards of a Linear reassemble the whole layer's GEMMs.
#include <gtest/gtest.h>

#include <string>

#include "src/base/errors.h"
#include "src/model/parameter.h"
#include "src/schemes/tensor1d/sharded_linear.h"
#include "src/schemes/tensor1d/tensor1d_grid.h"
#include "tests/model_shapes.h"

namespace mlps {
namespace {

ModelConfig tiny(BlockKind block = BlockKind::residual_mlp, int64_t layers = 2) {
  return model_shape(6, 24, layers, 2, block);  // S² = 36, F = 48
}

std::vector<LinearSplit> splits(const Tensor1dGrid& plan) {
  std::vector<LinearSplit> out;
  for (const auto& l : plan.linears) out.push_back(l.split);
  return out;
}

using S = LinearSplit;

TEST(Tensor1dGrid, ResidualBlocksAreColumnThenRowAndEmbedAndClassifierSplitWhereTheyDivide) {
  EXPECT_EQ(splits(make_tensor1d_grid(tiny(), 2)),
            (std::vector<S>{S::row, S::column, S::row, S::column, S::row, S::column}));
  // 10 classes do not divide by 3 or 4: the classifier stays whole.
  EXPECT_EQ(splits(make_tensor1d_grid(tiny(), 3)),
            (std::vector<S>{S::row, S::column, S::row, S::column, S::row, S::replicated}));
  ModelConfig odd_image = tiny();
  odd_image.image_size = 5;  // S² = 25
  EXPECT_EQ(make_tensor1d_grid(odd_image, 4).embed().split, S::replicated);
  for (const auto& l : make_tensor1d_grid(tiny(), 1).linears) EXPECT_EQ(l.split, S::replicated);
}

TEST(Tensor1dGrid, PlainBlocksPairUpAndAnOddLastOneIsReplicated) {
  EXPECT_EQ(splits(make_tensor1d_grid(tiny(BlockKind::plain, 3), 2)),
            (std::vector<S>{S::row, S::column, S::row, S::replicated, S::column}));
}

TEST(Tensor1dGrid, AWidthTheGridDoesNotDivideIsAnInputErrorNamingIt) {
  ModelConfig c = tiny();
  c.hidden = 16;  // F = 32
  try {
    make_tensor1d_grid(c, 3);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tp 3 does not divide the FFN width 32"),
              std::string::npos) << e.what();
  }
  c.block = BlockKind::plain;
  EXPECT_THROW(make_tensor1d_grid(c, 3), InputError);
  EXPECT_NO_THROW(make_tensor1d_grid(c, 4));
  // A width set by --ffn-hidden is named as such.
  c = tiny();
  c.ffn_width = 30;
  EXPECT_NO_THROW(make_tensor1d_grid(c, 3));
  try {
    make_tensor1d_grid(c, 4);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the FFN width 30 (--ffn-hidden 30)"), std::string::npos)
        << e.what();
  }
}

TEST(Tensor1dGrid, LocalParametersAreTheWholeModelAtOneRankAndShrinkWithT) {
  for (BlockKind block : {BlockKind::residual_mlp, BlockKind::plain}) {
    const ModelConfig c = tiny(block, 3);
    EXPECT_EQ(local_parameter_count(make_tensor1d_grid(c, 1)), parameter_count(c));
  }
  // T = 2 by hand: embed 36·24/2 + 24; per block LayerNorm 2·24, fc1 24·48/2 + 48/2,
  // fc2 48·24/2 + 24; classifier 10·24/2 + 10/2.
  const int64_t block = 48 + (576 + 24) + (576 + 24);
  EXPECT_EQ(local_parameter_count(make_tensor1d_grid(tiny(), 2)), 456 + 2 * block + 125);
}

TEST(Tensor1dGrid, AnalyticVolumesCountEveryTensorParallelAllReduceAndTheDataGradients) {
  const Tensor1dGrid plan = make_tensor1d_grid(tiny(), 2);
  const auto bytes = tensor1d_comm_bytes(plan, 6, sizeof(double), 2);
  // rows·H·8 per all-reduce: embed forward, 2 per block, classifier backward.
  EXPECT_EQ(bytes.at("allreduce:tp"), 6.0 * 24 * 8 * (1 + 2 * 2 + 1));
  EXPECT_EQ(bytes.at("allgather:tp"), 6.0 * 10 * 8);
  EXPECT_EQ(bytes.at("allreduce:data"), 8.0 * local_parameter_count(plan));
  EXPECT_TRUE(tensor1d_comm_bytes(make_tensor1d_grid(tiny(), 1), 6, 8, 1).empty());
  EXPECT_EQ(tensor1d_comm_bytes(make_tensor1d_grid(tiny(), 3), 6, 8, 1).count("allgather:tp"), 0u);
}

TEST(Tensor1dGrid, AnalyticCallsAreTheCollectivesTheBytesCount) {
  // Tiny model, T = 2, D = 2 (as above): each all-reduce carries one [rows × H] activation, the
  // logits are gathered once and the data gradients go unit by unit (embed, 2 blocks, classifier).
  CommCalls calls;
  const Tensor1dGrid plan = make_tensor1d_grid(tiny(), 2);
  const auto bytes = tensor1d_comm_bytes(plan, 6, sizeof(double), 2, false, 0, &calls);
  EXPECT_EQ(calls.at("allreduce:tp"), bytes.at("allreduce:tp") / (6.0 * 24 * 8));
  EXPECT_EQ(calls.at("allgather:tp"), 1);
  EXPECT_EQ(calls.at("allreduce:data"), 4);
  EXPECT_EQ(calls.size(), bytes.size());
  // Sequence parallel: one gather or scatter per activation (+ the logits), and one all-reduce
  // per LayerNorm γ and β.
  CommCalls sp_calls;
  const auto sp = tensor1d_comm_bytes(make_tensor1d_grid(tiny(), 2, true), 6, 8, 1, false, 0,
                                      &sp_calls);
  const double logits = 6.0 * 10 * 8, activation = 6.0 * 24 * 8;
  EXPECT_EQ(sp_calls.at("allgather:tp"), (sp.at("allgather:tp") - logits) / activation + 1);
  EXPECT_EQ(sp_calls.at("reduce_scatter:tp"), sp.at("reduce_scatter:tp") / activation);
  EXPECT_EQ(sp_calls.at("allreduce:tp"), 2 * 2);
}

TEST(Tensor1dGrid, CheckpointingRepeatsEachBlocksForwardAllReduceAndInferenceHasOnlyForwards) {
  ModelConfig c = tiny();  // 2 residual blocks
  c.checkpoint_activations = true;
  const Tensor1dGrid plan = make_tensor1d_grid(c, 2);
  const auto bytes = tensor1d_comm_bytes(plan, 6, sizeof(double), 2);
  // + one fc2 all-reduce per block in the recompute; the embed's is not rerun.
  EXPECT_EQ(bytes.at("allreduce:tp"), 6.0 * 24 * 8 * (1 + 3 * 2 + 1));
  EXPECT_EQ(bytes.at("allgather:tp"), 6.0 * 10 * 8);
  EXPECT_EQ(bytes.at("allreduce:data"), 8.0 * local_parameter_count(plan));
  // Inference: the embed's and each fc2's forward all-reduce, the logits, no gradients.
  const auto forward = tensor1d_comm_bytes(plan, 6, sizeof(double), 2, true);
  EXPECT_EQ(forward.at("allreduce:tp"), 6.0 * 24 * 8 * (1 + 2));
  EXPECT_EQ(forward.at("allgather:tp"), 6.0 * 10 * 8);
  EXPECT_EQ(forward.count("allreduce:data"), 0u);
  // Plain blocks: 3 blocks are one column/row pair (one forward all-reduce) and a replicated one.
  ModelConfig plain = tiny(BlockKind::plain, 3);
  plain.checkpoint_activations = true;
  const auto pair = tensor1d_comm_bytes(make_tensor1d_grid(plain, 2), 6, sizeof(double), 1);
  EXPECT_EQ(pair.at("allreduce:tp"), 6.0 * 24 * 8 * (1 + 3 * 1 + 1));
}

TEST(Tensor1dGrid, SequenceParallelMovesTheSameActivationBytesOnTheWireAsItsAllReduces) {
  // Ring bytes per rank: an all-reduce 2(T−1)/T of its size, an all-gather or a reduce-scatter
  // (T−1)/T. With the embed row-split and the classifier column-split (T = 2 here) every
  // activation all-reduce becomes one all-gather and one reduce-scatter, so the logged sizes of
  // those add up to twice the all-reduces'; the logits' all-gather is common to both.
  for (bool checkpoint : {false, true}) {
    ModelConfig c = tiny();
    c.checkpoint_activations = checkpoint;
    const auto plain = tensor1d_comm_bytes(make_tensor1d_grid(c, 2), 6, 8, 1);
    const Tensor1dGrid plan = make_tensor1d_grid(c, 2, true);
    ASSERT_TRUE(plan.sequence_parallel);
    const auto sp = tensor1d_comm_bytes(plan, 6, 8, 1);
    const double logits = 6.0 * 10 * 8;
    EXPECT_EQ(sp.at("allgather:tp") - logits + sp.at("reduce_scatter:tp"),
              2 * plain.at("allreduce:tp"));
    // What it adds: γ's and β's gradients, summed over tp (2·H per block).
    EXPECT_EQ(sp.at("allreduce:tp"), 8.0 * 2 * 2 * 24);
  }
  // At T = 1 the flag changes nothing.
  EXPECT_FALSE(make_tensor1d_grid(tiny(), 1, true).sequence_parallel);
}

TEST(Tensor1dGrid, SequenceParallelRefusesPlainBlocksAWidthTDoesNotDivideAndUnevenRows) {
  EXPECT_THROW(make_tensor1d_grid(tiny(BlockKind::plain, 2), 2, true), InputError);
  ModelConfig c = tiny();
  c.hidden = 18;  // F = 36 divides by 4, H does not
  EXPECT_NO_THROW(make_tensor1d_grid(c, 4));
  EXPECT_THROW(make_tensor1d_grid(c, 4, true), InputError);
  const Tensor1dGrid plan = make_tensor1d_grid(tiny(), 2, true);
  EXPECT_NO_THROW(check_sequence_parallel_rows(plan, 12, 2));
  EXPECT_THROW(check_sequence_parallel_rows(plan, 13, 2), InputError);  // 6 and 7 rows
  EXPECT_THROW(check_sequence_parallel_rows(plan, 10, 2), InputError);  // 5 and 5
}

// A whole Linear(in → out) and its T shards, on the CPU, with values from the initialiser.
class ShardedLinearTest : public ::testing::Test {
 protected:
  static constexpr int64_t in = 6, out = 4, rows = 3, tp = 2;
  Device device{DeviceKind::cpu};
  std::vector<double> weight, bias, x, dy;

  void SetUp() override {
    weight.resize(out * in);
    bias.resize(out);
    x.resize(rows * in);
    dy.resize(rows * out);
    fill_initial_shard(weight.data(), in, 1, 0, InitKind::uniform_fan_in, in, 0, out, 0, in);
    fill_initial_shard(bias.data(), out, 1, 1, InitKind::uniform_fan_in, in, 0, 1, 0, out);
    fill_initial_shard(x.data(), in, 1, 2, InitKind::uniform_fan_in, 1, 0, rows, 0, in);
    fill_initial_shard(dy.data(), out, 1, 3, InitKind::uniform_fan_in, 1, 0, rows, 0, out);
  }
  double full_y(int64_t r, int64_t o) const {
    double s = bias[o];
    for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * weight[o * in + i];
    return s;
  }
  double full_dx(int64_t r, int64_t i) const {
    double s = 0;
    for (int64_t o = 0; o < out; ++o) s += dy[r * out + o] * weight[o * in + i];
    return s;
  }
  double full_dw(int64_t o, int64_t i) const {
    double s = 0;
    for (int64_t r = 0; r < rows; ++r) s += dy[r * out + o] * x[r * in + i];
    return s;
  }
};

TEST_F(ShardedLinearTest, ColumnShardsComputeTheirOutputFeaturesAndPartialInputGradients) {
  std::vector<double> dx_sum(rows * in, 0.0);
  for (int t = 0; t < tp; ++t) {
    ShardedLinear<double> shard(device, {{"l", in, out}, LinearSplit::column}, t, tp);
    const int64_t lo = shard.local_out(), o0 = shard.out_offset();
    ASSERT_EQ(lo, out / tp);
    std::vector<double> w(weight.begin() + o0 * in, weight.begin() + (o0 + lo) * in);
    std::vector<double> b(bias.begin() + o0, bias.begin() + o0 + lo);
    std::vector<double> dw(lo * in), db(lo), y(rows * lo), dx(rows * in);
    shard.bind(w.data(), dw.data(), b.data(), db.data());
    shard.multiply(x.data(), in, y.data(), lo, rows);
    shard.add_bias(y.data(), rows);
    // This rank's columns of the full dY, read in place (leading dimension out).
    shard.input_grad(dy.data() + o0, out, dx.data(), in, rows);
    shard.weight_grad(x.data(), in, dy.data() + o0, out, rows, false);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < lo; ++o) EXPECT_NEAR(y[r * lo + o], full_y(r, o0 + o), 1e-14);
    for (int64_t o = 0; o < lo; ++o)
      for (int64_t i = 0; i < in; ++i) EXPECT_NEAR(dw[o * in + i], full_dw(o0 + o, i), 1e-14);
    for (size_t k = 0; k < dx.size(); ++k) dx_sum[k] += dx[k];  // what the all-reduce does
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < in; ++i) EXPECT_NEAR(dx_sum[r * in + i], full_dx(r, i), 1e-14);
}

TEST_F(ShardedLinearTest, RowShardsReadTheirInputFeaturesInPlaceAndSumToTheOutput) {
  std::vector<double> y_sum(rows * out, 0.0);
  for (int t = 0; t < tp; ++t) {
    ShardedLinear<double> shard(device, {{"l", in, out}, LinearSplit::row}, t, tp);
    const int64_t li = shard.local_in(), i0 = shard.in_offset();
    ASSERT_EQ(li, in / tp);
    ASSERT_EQ(shard.bias_size(), out);
    std::vector<double> w(out * li), dw(out * li), db(out), y(rows * out), dx(rows * li);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < li; ++i) w[o * li + i] = weight[o * in + i0 + i];
    shard.bind(w.data(), dw.data(), bias.data(), db.data());
    shard.multiply(x.data() + i0, in, y.data(), out, rows);
    shard.weight_grad(x.data() + i0, in, dy.data(), out, rows, false);
    shard.input_grad(dy.data(), out, dx.data(), li, rows);
    for (size_t k = 0; k < y.size(); ++k) y_sum[k] += y[k];  // the forward all-reduce
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < li; ++i) EXPECT_NEAR(dw[o * li + i], full_dw(o, i0 + i), 1e-14);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < li; ++i) EXPECT_NEAR(dx[r * li + i], full_dx(r, i0 + i), 1e-14);
  }
  ShardedLinear<double> any(device, {{"l", in, out}, LinearSplit::row}, 0, tp);
  std::vector<double> unused(out);
  any.bind(nullptr, nullptr, bias.data(), unused.data());
  any.add_bias(y_sum.data(), rows);  // the replicated bias, once after the sum
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) EXPECT_NEAR(y_sum[r * out + o], full_y(r, o), 1e-14);
}

}  // namespace
}  // namespace mlps

// bin/tensor2d's bookkeeping without MPI: the balanced split rule; the shard layout of a q × q
// grid covers every element of every FcNet tensor exactly once (weights over the whole grid,
// vectors once per grid row) with blocks of the rule's sizes, no padding, also where q divides
// nothing, and keeps units contiguous; parts that would be empty are refused with the dimension
// named; the analytic volumes add up over the grid to the model's sizes, and a 1 × 1 grid
// communicates only over "data"; checkpointing adds exactly the blocks' forward traffic once
// more, and inference is the forward traffic alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "src/base/errors.h"
#include "src/model/serial_net.h"
#include "src/base/balanced_split.h"
#include "src/schemes/tensor2d/tensor2d_grid.h"
#include "src/schemes/tensor2d/shard_layout.h"
#include "src/schemes/tensor2d/tensor2d_volumes.h"
#include "tests/model_shapes.h"

namespace mlps {
namespace {

ModelConfig small_model(BlockKind block) {
  return model_shape(6, 24, 2, 2, block);  // 36 features
}

TEST(Tensor2dSplit, PartsTileTheDimensionAndTheFirstOnesAreOneLonger) {
  for (int64_t n : {1, 2, 5, 7, 10, 12, 25, 2048, 4096})
    for (int64_t parts = 1; parts <= std::min<int64_t>(n, 9); ++parts) {
      SCOPED_TRACE(std::to_string(n) + " over " + std::to_string(parts));
      int64_t next = 0;
      for (int64_t p = 0; p < parts; ++p) {
        EXPECT_EQ(part_first(n, parts, p), next);
        const int64_t size = part_size(n, parts, p);
        EXPECT_EQ(size, p < n % parts ? n / parts + 1 : n / parts);
        EXPECT_GE(size, 1);
        EXPECT_LE(size, largest_part(n, parts));
        next += size;
      }
      EXPECT_EQ(next, n);
      EXPECT_EQ(part_size(n, parts, 0), largest_part(n, parts));
    }
  EXPECT_EQ(part_size(2048, 3, 0), 683);  // the default H over q = 3: 683, 683, 682
  EXPECT_EQ(part_size(2048, 3, 2), 682);
  EXPECT_EQ(part_first(10, 3, 1), 4);     // the classifier's outputs: 4, 3, 3
}

TEST(Tensor2dLayout, ShardsCoverEveryElementOnce) {
  for (BlockKind block : {BlockKind::residual_mlp, BlockKind::plain})
    for (int64_t hidden : {24, 10})  // 10: H, F = 20 and S² = 36 divide by neither 3, 4 nor 7
      for (int q : {1, 2, 3, 4, 7}) {
        SCOPED_TRACE("H = " + std::to_string(hidden) + ", q = " + std::to_string(q));
        ModelConfig model = small_model(block);
        model.hidden = hidden;
        std::map<std::string, std::vector<int>> hits;  // per tensor, per element
        for (int i = 0; i < q; ++i)
          for (int j = 0; j < q; ++j) {
            const ShardLayout layout(model, q, i, j);
            int64_t next = 0;
            for (const UnitRange& u : layout.units()) {
              EXPECT_EQ(u.offset, next);
              EXPECT_EQ(u.vector_offset + u.vector_count, u.offset + u.count);
              next = u.offset + u.count;
            }
            EXPECT_EQ(next, layout.total());
            for (const TensorShard& t : layout.tensors()) {
              auto& h = hits[t.name];
              h.resize(static_cast<size_t>(t.global_rows * t.global_cols));
              if (t.matrix) {  // block (i, j) of Wᵀ
                EXPECT_EQ(t.rows, part_size(t.global_rows, q, j)) << t.name;
                EXPECT_EQ(t.cols, part_size(t.global_cols, q, i)) << t.name;
              } else {
                EXPECT_EQ(t.cols, part_size(t.global_cols, q, j)) << t.name;
              }
              if (!t.matrix && i != 0) continue;  // vectors: count grid row 0's
              for (int64_t r = 0; r < t.rows; ++r)
                for (int64_t c = 0; c < t.cols; ++c)
                  ++h.at(static_cast<size_t>((t.row0 + r) * t.global_cols + t.col0 + c));
            }
          }
        for (const auto& [name, h] : hits)
          for (size_t e = 0; e < h.size(); ++e) ASSERT_EQ(h[e], 1) << name << " element " << e;
        // Tensor order and ids are FcNet's.
        Device shapes(DeviceKind::cpu);
        SerialNet<double> net(shapes, model, 1, ParameterStorage::external);
        const ShardLayout layout(model, q, 0, 0);
        ASSERT_EQ(layout.tensors().size(), net.parameters().size());
        for (size_t t = 0; t < layout.tensors().size(); ++t) {
          EXPECT_EQ(layout.tensors()[t].name, net.parameters()[t].name);
          EXPECT_EQ(layout.tensors()[t].tensor_id, net.parameters()[t].tensor_id);
        }
      }
}

TEST(Tensor2dLayout, WeightBlocksTileTheWeightsWithoutPadding) {
  ModelConfig model = small_model(BlockKind::residual_mlp);
  const int64_t whole = ShardLayout(model, 1, 0, 0).matrix_elements();
  EXPECT_EQ(ShardLayout(model, 2, 1, 1).matrix_elements() * 4, whole);  // everything divides by 2
  for (int64_t hidden : {24, 10}) {
    model.hidden = hidden;
    const int64_t all = ShardLayout(model, 1, 0, 0).matrix_elements();
    int64_t sum = 0;
    for (int r = 0; r < 9; ++r) {
      const int64_t mine = ShardLayout(model, 3, r / 3, r % 3).matrix_elements();
      EXPECT_LE(mine, ShardLayout(model, 3, 0, 0).matrix_elements()) << "(0, 0) is the largest";
      sum += mine;
    }
    EXPECT_EQ(sum, all) << "H = " << hidden;
  }
}

TEST(Tensor2dLayout, InitialValuesAreTheModelsShards) {
  ModelConfig model = small_model(BlockKind::residual_mlp);
  model.hidden = 10;  // parts 4, 3, 3 over q = 3
  const ShardLayout layout(model, 3, 1, 2);
  const auto values = layout.initial_values<double>(7);
  // Classes 7..9 (column part 2 of 10), hidden units 4..6 (row part 1 of H).
  const TensorShard& w = layout.find("classifier.weight");
  ASSERT_EQ(w.rows, 3);
  ASSERT_EQ(w.cols, 3);
  EXPECT_EQ(w.row0, 7);
  EXPECT_EQ(w.col0, 4);
  EXPECT_EQ(values[w.offset + 1 * w.cols + 2],
            initial_value(7, w.tensor_id, w.init, w.fan_in, 8, 6));
  const TensorShard& gamma = layout.find("block1.norm.weight");
  EXPECT_EQ(gamma.col0, 7);
  EXPECT_EQ(gamma.cols, 3);
  EXPECT_EQ(values[gamma.offset], 1.0);
}

TEST(Tensor2dGrid, ShapesAndEmptyPartsAreRefused) {
  EXPECT_EQ(resolve_tensor2d_grid({2, 2}, 0, 8).dp, 2);
  EXPECT_EQ(resolve_tensor2d_grid({}, 0, 9).q, 3);
  EXPECT_EQ(resolve_tensor2d_grid({}, 2, 8).q, 2);
  auto message = [](auto call) {
    try {
      call();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no InputError");
  };
  EXPECT_NE(message([] { resolve_tensor2d_grid({2, 3}, 0, 6); }).find("square"), std::string::npos);
  EXPECT_NE(message([] { resolve_tensor2d_grid({3, 3}, 0, 4); }).find("9 ranks"), std::string::npos);
  EXPECT_NE(message([] { resolve_tensor2d_grid({2, 2}, 3, 8); }).find("--dp 3"), std::string::npos);
  EXPECT_NE(message([] { resolve_tensor2d_grid({2}, 0, 4); }).find("--tp-dims 2"), std::string::npos);
  EXPECT_NE(message([] { resolve_tensor2d_grid({}, 0, 6); }).find("square"), std::string::npos);
  ModelConfig model = small_model(BlockKind::residual_mlp);
  EXPECT_NO_THROW(check_grid_fits(model, 12, {3, 2}));
  model.image_size = 5;  // 25 features, H 10, B 7: nothing divides by 2 or 3, nothing is empty
  model.hidden = 10;
  EXPECT_NO_THROW(check_grid_fits(model, 7, {3, 1}));
  EXPECT_NO_THROW(check_grid_fits(model, 7, {2, 2}));
  EXPECT_NO_THROW(check_grid_fits(model, 10, {10, 1}));
  EXPECT_NE(message([&] { check_grid_fits(model, 5, {3, 2}); }).find("--batch 5"),
            std::string::npos);
  model.image_size = 1;
  EXPECT_NE(message([&] { check_grid_fits(model, 12, {2, 1}); }).find("--image-size 1"),
            std::string::npos);
  model.image_size = 6;
  model.hidden = 2;
  EXPECT_NE(message([&] { check_grid_fits(model, 12, {3, 1}); }).find("--hidden 2"),
            std::string::npos);
  model.hidden = 24;
  EXPECT_NE(message([&] { check_grid_fits(model, 200, {11, 1}); }).find("10 outputs"),
            std::string::npos);
  model.ffn_width = 2;  // --ffn-hidden below q: F has empty blocks
  EXPECT_NE(message([&] { check_grid_fits(model, 12, {3, 1}); }).find("--ffn-hidden 2"),
            std::string::npos);
  model.ffn_width = 7;  // q need not divide F
  EXPECT_NO_THROW(check_grid_fits(model, 12, {3, 1}));
}

TEST(Tensor2dVolumes, DataAllReduceMovesEveryLocalParameter) {
  const ModelConfig model = small_model(BlockKind::residual_mlp);
  const auto one = tensor2d_volumes(model, 24, {3, 1}, 8);
  EXPECT_EQ(one.count("allreduce:data"), 0u);
  const auto two = tensor2d_volumes(model, 24, {3, 2}, 8);
  EXPECT_EQ(two.at("allreduce:data"), 8.0 * ShardLayout(model, 3, 0, 0).total());
  // A 1 × 1 grid communicates only over "data".
  EXPECT_TRUE(tensor2d_volumes(model, 24, {1, 1}, 8).empty());
  const auto replicas = tensor2d_volumes(model, 24, {1, 4}, 8);
  ASSERT_EQ(replicas.size(), 1u);
  EXPECT_EQ(replicas.at("allreduce:data"), 8.0 * ShardLayout(model, 1, 0, 0).total());
  // Weight traffic does not depend on the batch; activation traffic is linear in it.
  const auto doubled = tensor2d_volumes(model, 48, {3, 1}, 8);
  EXPECT_EQ(doubled.at("broadcast:row"), 2 * one.at("broadcast:row"));
  EXPECT_EQ(doubled.at("broadcast:col"), one.at("broadcast:col"));
}

TEST(Tensor2dVolumes, CallsCountEachSummaStepsBroadcastAndEachUnitsSums) {
  // 6 Linears (embed, 2 blocks of fc1/fc2, classifier), 4 units, q = 3, 2 replicas. Per SUMMA
  // product q panel broadcasts: forward and dW over "row", forward and dX (not the embed's) over
  // "col"; a reduce-scatter per dW (col) and per dX (row); each LayerNorm gathers its row
  // statistics forward and sums them backward; the logits are gathered once.
  ModelConfig model = small_model(BlockKind::residual_mlp);
  CommCalls calls;
  tensor2d_volumes(model, 24, {3, 2}, 8, {}, false, &calls);
  const CommCalls expected = {{"broadcast:row", 6 * 2 * 3}, {"broadcast:col", (6 + 5) * 3},
                              {"reduce_scatter:col", 6},    {"reduce_scatter:row", 5},
                              {"allgather:row", 1 + 2},     {"allreduce:row", 2},
                              {"allreduce:col", 4},         {"allreduce:data", 4}};
  EXPECT_EQ(calls, expected);
  // Checkpointing reruns the 4 block Linears' forwards and the LayerNorms' gathers.
  model.checkpoint_activations = true;
  CommCalls rerun;
  tensor2d_volumes(model, 24, {3, 2}, 8, {}, false, &rerun);
  EXPECT_EQ(rerun.at("broadcast:row"), expected.at("broadcast:row") + 4 * 3);
  EXPECT_EQ(rerun.at("broadcast:col"), expected.at("broadcast:col") + 4 * 3);
  EXPECT_EQ(rerun.at("allgather:row"), 1 + 2 * 2);
}

TEST(Tensor2dVolumes, UnevenVolumesAddUpToTheModelOverTheGrid) {
  ModelConfig model = small_model(BlockKind::residual_mlp);
  model.hidden = 10;
  model.image_size = 5;
  const int q = 3;
  const int64_t batch = 7;
  double vector_elements = 0, linear_inputs = 0;
  for (const LinearShape& s : linear_shapes(model)) {
    vector_elements += static_cast<double>(s.out);
    linear_inputs += static_cast<double>(s.in);
  }
  vector_elements += 2.0 * static_cast<double>(model.layers * model.hidden);  // γ, β
  double vector_sum = 0, rows_sum = 0;
  for (int i = 0; i < q; ++i) {
    const auto v = tensor2d_volumes(model, batch, {q, 1}, 8, {0, i, i});
    vector_sum += v.at("allreduce:col") / 8;
    // Forward and dW each broadcast a whole row of X blocks: 2·b·ΣK elements.
    rows_sum += v.at("broadcast:row") / 8 / (2 * linear_inputs);
  }
  EXPECT_EQ(vector_sum, vector_elements) << "the columns' vector parts are every vector once";
  EXPECT_EQ(rows_sum, static_cast<double>(batch)) << "the grid rows' samples are the batch";
  // Rank (0, 0) has the largest parts, (2, 2) the smallest; reduce-scatters pad to the largest.
  const auto big = tensor2d_volumes(model, batch, {q, 1}, 8, {0, 0, 0});
  const auto small = tensor2d_volumes(model, batch, {q, 1}, 8, {0, 2, 2});
  EXPECT_GT(big.at("broadcast:col"), small.at("broadcast:col"));
  EXPECT_EQ(big.at("allgather:row") / 3, small.at("allgather:row") / 2)
      << "3 rows against 2, each gathering the same moments and padded logit blocks";
  const auto replicas = tensor2d_volumes(model, batch * 2, {q, 2}, 8, {1, 2, 1});
  EXPECT_EQ(replicas.at("allreduce:data"), 8.0 * ShardLayout(model, q, 2, 1).total());
}

// The forward pass's share of a training step, from the per-Linear terms: the embed's and the
// classifier's X and W broadcasts, and the blocks'; LayerNorm's moment all-gathers.
TEST(Tensor2dVolumes, CheckpointingRepeatsTheBlocksForwardOnly) {
  for (BlockKind block : {BlockKind::residual_mlp, BlockKind::plain})
    for (int64_t hidden : {24, 10}) {
      SCOPED_TRACE("H = " + std::to_string(hidden));
      ModelConfig model = small_model(block);
      model.hidden = hidden;
      const int q = 3;
      const int64_t batch = 14;
      const GridPosition at{1, 2, 1};
      const Tensor2dGrid shape{q, 2};
      const double e = 8;
      const double b = static_cast<double>(part_size(batch, 2 * q, 1 * q + 2));
      const auto stored = tensor2d_volumes(model, batch, shape, 8, at);
      model.checkpoint_activations = true;
      const auto rerun = tensor2d_volumes(model, batch, shape, 8, at);
      const auto shapes = linear_shapes(model);
      double row = 0, col = 0;
      for (size_t l = 1; l + 1 < shapes.size(); ++l) {  // the blocks' Linears
        row += b * static_cast<double>(shapes[l].in) * e;
        col += static_cast<double>(part_size(shapes[l].out, q, at.column) * shapes[l].in) * e;
      }
      // Each residual block's LayerNorm all-gathers 2b moments from each of the q ranks.
      const double norms =
          block == BlockKind::residual_mlp ? static_cast<double>(model.layers) * q * 2 * b * e : 0;
      ASSERT_EQ(rerun.size(), stored.size());
      for (const auto& [kind, bytes] : stored) {
        double extra = 0;
        if (kind == "broadcast:row") extra = row;
        if (kind == "broadcast:col") extra = col;
        if (kind == "allgather:row") extra = norms;
        EXPECT_EQ(rerun.at(kind), bytes + extra) << kind;
      }
      EXPECT_GT(row, 0);
    }
}

TEST(Tensor2dVolumes, InferenceIsTheForwardTrafficAlone) {
  for (bool checkpoint : {false, true}) {
    ModelConfig model = small_model(BlockKind::residual_mlp);
    model.hidden = 10;
    model.checkpoint_activations = checkpoint;  // nothing to recompute without backward
    const int q = 3;
    const int64_t batch = 7;
    const GridPosition at{0, 1, 2};
    const auto inference = tensor2d_volumes(model, batch, {q, 2}, 8, at, true);
    std::vector<std::string> kinds;
    for (const auto& [kind, bytes] : inference) kinds.push_back(kind);
    EXPECT_EQ(kinds, (std::vector<std::string>{"allgather:row", "broadcast:col", "broadcast:row"}));
    // Training broadcasts X twice per Linear (forward, dW); forward alone once.
    model.checkpoint_activations = false;
    const auto training = tensor2d_volumes(model, batch, {q, 2}, 8, at);
    EXPECT_EQ(2 * inference.at("broadcast:row"), training.at("broadcast:row"));
    EXPECT_EQ(inference.at("allgather:row"), training.at("allgather:row"));
    EXPECT_LT(inference.at("broadcast:col"), training.at("broadcast:col"));
    EXPECT_TRUE(tensor2d_volumes(model, batch, {1, 4}, 8, {}, true).empty())
        << "replicas exchange nothing when nothing is trained";
  }
}

}  // namespace
}  // namespace mlps

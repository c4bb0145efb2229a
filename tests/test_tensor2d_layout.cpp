// bin/tensor2d's bookkeeping without MPI: the shard layout of a q × q grid covers every
// element of every FcNet tensor exactly once (weights over the whole grid, vectors once per
// grid row), pads only past a tensor's end (the classifier at q = 3, 4, 12, where some grid
// columns hold no class at all), keeps units contiguous; grid shapes and splits that do not
// divide are refused with the dimension named; the analytic "data" volume is the layout's size,
// and a 1 × 1 grid has no other.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "src/errors.h"
#include "src/model/fc_net.h"
#include "src/schemes/tensor2d/grid_2d.h"
#include "src/schemes/tensor2d/shard_layout.h"
#include "src/schemes/tensor2d/volumes_2d.h"

namespace mlps {
namespace {

ModelConfig small_model(BlockKind block) {
  ModelConfig m;
  m.image_size = 6;  // 36 features
  m.hidden = 24;
  m.layers = 2;
  m.ffn_mult = 2;
  m.block = block;
  return m;
}

TEST(Tensor2dLayout, ShardsCoverEveryElementOnce) {
  for (BlockKind block : {BlockKind::residual_mlp, BlockKind::plain})
    for (int q : {1, 2, 3, 4, 12}) {
      SCOPED_TRACE("q = " + std::to_string(q));
      const ModelConfig model = small_model(block);
      std::map<std::string, std::vector<int>> hits;  // per tensor, per element
      int64_t total = -1;
      for (int i = 0; i < q; ++i)
        for (int j = 0; j < q; ++j) {
          const ShardLayout layout(model, q, i, j);
          if (total < 0) total = layout.total();
          EXPECT_EQ(layout.total(), total) << "every rank's flat buffer has the same size";
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
            if (!t.matrix && i != 0) continue;  // vectors: count grid row 0's
            EXPECT_LE(t.valid_rows, t.rows);
            EXPECT_LE(t.valid_cols, t.cols);
            for (int64_t r = 0; r < t.valid_rows; ++r)
              for (int64_t c = 0; c < t.valid_cols; ++c)
                ++h.at(static_cast<size_t>((t.row0 + r) * t.global_cols + t.col0 + c));
          }
        }
      for (const auto& [name, h] : hits)
        for (size_t e = 0; e < h.size(); ++e) ASSERT_EQ(h[e], 1) << name << " element " << e;
      // Tensor order and ids are FcNet's.
      Device shapes(DeviceKind::cpu);
      FcNet<double> net(shapes, model, 1, ParameterStorage::external);
      const ShardLayout layout(model, q, 0, 0);
      ASSERT_EQ(layout.tensors().size(), net.parameters().size());
      for (size_t t = 0; t < layout.tensors().size(); ++t) {
        EXPECT_EQ(layout.tensors()[t].name, net.parameters()[t].name);
        EXPECT_EQ(layout.tensors()[t].tensor_id, net.parameters()[t].tensor_id);
      }
    }
}

TEST(Tensor2dLayout, WeightBlocksShrinkAsOneOverQSquared) {
  const ModelConfig model = small_model(BlockKind::residual_mlp);
  const int64_t whole = ShardLayout(model, 1, 0, 0).matrix_elements();
  EXPECT_EQ(ShardLayout(model, 2, 1, 1).matrix_elements() * 4, whole);  // 10 classes divide by 2
  // At q = 3 only the classifier is padded (10 → 12 rows).
  EXPECT_EQ(ShardLayout(model, 3, 2, 0).matrix_elements() * 9, whole + 2 * model.hidden);
}

TEST(Tensor2dLayout, InitialValuesAreTheModelsShards) {
  const ModelConfig model = small_model(BlockKind::residual_mlp);
  const ShardLayout layout(model, 3, 1, 2);
  const auto values = layout.initial_values<double>(7);
  const TensorShard& w = layout.find("classifier.weight");  // column 2 holds classes 8, 9
  ASSERT_EQ(w.valid_rows, 2);
  EXPECT_EQ(values[w.offset + 1 * w.cols + 3],
            initial_value(7, w.tensor_id, w.init, w.fan_in, 9, 1 * 8 + 3));
  for (int64_t r = w.valid_rows; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c) EXPECT_EQ(values[w.offset + r * w.cols + c], 0.0);
  const TensorShard& gamma = layout.find("block1.norm.weight");
  EXPECT_EQ(values[gamma.offset], 1.0);
}

TEST(Tensor2dGrid, ShapesAndSplitsThatDoNotDivideAreRefused) {
  EXPECT_EQ(resolve_grid_shape("2,2", 0, 8).dp, 2);
  EXPECT_EQ(resolve_grid_shape("", 0, 9).q, 3);
  EXPECT_EQ(resolve_grid_shape("", 2, 8).q, 2);
  auto message = [](auto call) {
    try {
      call();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no InputError");
  };
  EXPECT_NE(message([] { resolve_grid_shape("2,3", 0, 6); }).find("square"), std::string::npos);
  EXPECT_NE(message([] { resolve_grid_shape("3,3", 0, 4); }).find("9 ranks"), std::string::npos);
  EXPECT_NE(message([] { resolve_grid_shape("2,2", 3, 8); }).find("--dp 3"), std::string::npos);
  EXPECT_NE(message([] { resolve_grid_shape("2", 0, 4); }).find("--tp-dims 2"), std::string::npos);
  EXPECT_NE(message([] { resolve_grid_shape("", 0, 6); }).find("square"), std::string::npos);
  ModelConfig model = small_model(BlockKind::residual_mlp);
  EXPECT_NO_THROW(check_grid_divides(model, 12, {3, 2}));
  model.image_size = 5;  // 25 features
  EXPECT_NE(message([&] { check_grid_divides(model, 12, {2, 1}); }).find("--image-size 5"),
            std::string::npos);
  model.image_size = 6;
  EXPECT_NE(message([&] { check_grid_divides(model, 10, {2, 2}); }).find("--batch 10"),
            std::string::npos);
  model.hidden = 20;
  EXPECT_NE(message([&] { check_grid_divides(model, 12, {3, 1}); }).find("--hidden 20"),
            std::string::npos);
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

}  // namespace
}  // namespace mlps

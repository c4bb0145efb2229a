// Pipeline parallelism without MPI, the plan: the schedules (order, activation slots, and a
// simulated run reaching the ideal makespan), the cost-balanced partition against brute force
// and the grid checks. The stages themselves: test_pipeline_stage.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <tuple>

#include "src/base/errors.h"
#include "src/schemes/pipeline/pipeline_grid.h"
#include "src/schemes/pipeline/pipeline_simulation.h"
#include "tests/small_pipeline_model.h"

namespace mlps {
namespace {

using Pass = PipelineAction::Pass;
using Kind = PipelineScheduleKind;
constexpr Kind kKinds[] = {Kind::gpipe, Kind::one_f_one_b, Kind::interleaved, Kind::zb_h1,
                           Kind::zb_v};

std::vector<std::vector<PipelineAction>> all_actions(const PipelineShape& shape) {
  std::vector<std::vector<PipelineAction>> lists;
  for (int s = 0; s < shape.stages; ++s) lists.push_back(stage_actions(shape, s));
  return lists;
}

// The shapes a kind runs: interleaved needs M a multiple of P (v = 1, 2 and 3).
std::vector<PipelineShape> shapes_of(Kind kind, int p, int m) {
  if (kind != Kind::interleaved) return {make_pipeline_shape(kind, p, m)};
  if (m % p != 0) return {};
  return {make_pipeline_shape(kind, p, m, 1), make_pipeline_shape(kind, p, m, 2),
          make_pipeline_shape(kind, p, m, 3)};
}

TEST(PipelineSchedule, EveryRankRunsEachPassOnceInOrderWithinItsActivationBudget) {
  for (auto kind : kKinds)
    for (int p = 1; p <= 5; ++p)
      for (int m = 1; m <= 9; ++m)
        for (const PipelineShape& shape : shapes_of(kind, p, m))
          for (int s = 0; s < p; ++s) {
            SCOPED_TRACE(std::string(to_string(kind)) + " P=" + std::to_string(p) +
                         " M=" + std::to_string(m) + " chunks=" + std::to_string(shape.chunks) +
                         " s=" + std::to_string(s));
            const auto actions = stage_actions(shape, s);
            const bool split = splits_backward(kind);
            ASSERT_EQ(actions.size(), static_cast<size_t>((split ? 3 : 2) * m * shape.chunks));
            // Per chunk: forwards, B's (or backwards) and W's each in micro-batch order, a B
            // after its forward, a W after its B.
            std::vector<int> forwards(shape.chunks), inputs(shape.chunks), weights(shape.chunks);
            int held = 0, most = 0;
            for (const auto& a : actions) {
              ASSERT_LT(a.chunk, shape.chunks);
              if (a.pass == Pass::forward) {
                EXPECT_EQ(a.micro_batch, forwards[a.chunk]++);
                ++held;
              } else if (a.pass == Pass::backward_weight) {
                EXPECT_TRUE(split);
                EXPECT_EQ(a.micro_batch, weights[a.chunk]++);
                EXPECT_LT(a.micro_batch, inputs[a.chunk]) << "W before its B";
              } else {
                EXPECT_EQ(a.pass == Pass::backward_input, split);
                EXPECT_EQ(a.micro_batch, inputs[a.chunk]++);
                EXPECT_LT(a.micro_batch, forwards[a.chunk]) << "backward before its forward";
              }
              if (releases_activations(a)) --held;
              most = std::max(most, held);
            }
            EXPECT_EQ(most, max_in_flight(shape, s));
          }
}

// NCCL's untagged point-to-point matches in call order: the schedules it can carry.
TEST(PipelineSchedule, TransfersArriveInOrderWhereNcclCanCarryThem) {
  for (auto kind : {Kind::gpipe, Kind::one_f_one_b, Kind::interleaved, Kind::zb_h1})
    for (int p = 1; p <= 6; ++p)
      for (int m = 1; m <= 12; ++m)
        for (const PipelineShape& shape : shapes_of(kind, p, m))
          EXPECT_TRUE(transfers_arrive_in_order(shape))
              << to_string(kind) << " P=" << p << " M=" << m << " chunks=" << shape.chunks;
  // ZB-V beyond M = P: rank s sends virtual stage s's activations and virtual stage
  // 2P − 1 − s's input gradients to rank s + 1 on one link, wanted in another order (at P = 2,
  // M = 4 an emulated NCCL run trained wrong weights before this check existed).
  for (int p = 2; p <= 6; ++p)
    for (int m = 1; m <= 12; ++m)
      EXPECT_EQ(transfers_arrive_in_order(make_pipeline_shape(Kind::zb_v, p, m)), m <= p)
          << "zb-v P=" << p << " M=" << m;
}

TEST(PipelineSchedule, OneFOneBWarmsUpWithPMinusSMinusOneForwards) {
  const auto shape = make_pipeline_shape(Kind::one_f_one_b, 4, 8);
  const auto actions = stage_actions(shape, 1);
  const std::vector<PipelineAction> start{{Pass::forward, 0}, {Pass::forward, 1},
                                          {Pass::forward, 2}, {Pass::backward, 0},
                                          {Pass::forward, 3}, {Pass::backward, 1}};
  EXPECT_TRUE(std::equal(start.begin(), start.end(), actions.begin()));
  EXPECT_EQ(max_in_flight(shape, 1), 3);
  EXPECT_EQ(max_in_flight(make_pipeline_shape(Kind::gpipe, 4, 8), 1), 8);
  EXPECT_EQ(max_in_flight(make_pipeline_shape(Kind::one_f_one_b, 4, 2), 0), 2);
  // ZB-H1 keeps every stage within 1F1B's stage-0 peak; interleaved's warm-up is Megatron's.
  for (int s = 0; s < 4; ++s)
    EXPECT_EQ(max_in_flight(make_pipeline_shape(Kind::zb_h1, 4, 8), s), 4);
  EXPECT_EQ(max_in_flight(make_pipeline_shape(Kind::interleaved, 4, 8, 2), 0), 2 * 3 + 4 + 1);
  EXPECT_EQ(max_in_flight(make_pipeline_shape(Kind::interleaved, 4, 8, 2), 3), 4 + 1);
}

TEST(PipelineSchedule, ChunksSitOnRanksAsTheirScheduleSays) {
  const auto interleaved = make_pipeline_shape(Kind::interleaved, 4, 8, 2);
  EXPECT_EQ(interleaved.virtual_stage(1, 1), 5);
  EXPECT_EQ(interleaved.rank_of(5), 1);
  const auto v = make_pipeline_shape(Kind::zb_v, 4, 8);
  EXPECT_EQ(v.chunks, 2);
  EXPECT_EQ(v.virtual_stage(0, 1), 7);  // rank 0 holds the first and the last
  EXPECT_EQ(v.virtual_stage(3, 1), 4);  // rank 3 the two in the middle
  for (int vs = 0; vs < 8; ++vs)
    EXPECT_EQ(v.virtual_stage(v.rank_of(vs), v.chunk_of(vs)), vs);
}

TEST(PipelineSchedule, BalancedStagesReachTheIdealBubble) {
  // With equal pass times (a whole backward B + W) the simulated idle share of each schedule
  // is its formula; ZB-H1's is a third of 1F1B's bubble time and ZB-V's below ZB-H1's.
  for (auto kind : kKinds)
    for (int p = 1; p <= 5; ++p)
      for (int m = 1; m <= 9; ++m)
        for (const PipelineShape& shape : shapes_of(kind, p, m)) {
          SCOPED_TRACE(std::string(to_string(kind)) + " P=" + std::to_string(p) +
                       " M=" + std::to_string(m) + " chunks=" + std::to_string(shape.chunks));
          const PassTimes times{1.0, 1.0, 1.0};
          const SimulatedPipeline run = simulate_pipeline(shape, all_actions(shape), times);
          ASSERT_FALSE(run.deadlocked);
          for (int s = 0; s < p; ++s)
            EXPECT_NEAR(1.0 - run.busy[s] / run.makespan, ideal_bubble_fraction(shape, times),
                        1e-12);
        }
  const PassTimes unit;
  for (int p = 2; p <= 5; ++p) {
    const double one_f_one_b =
        ideal_bubble_fraction(make_pipeline_shape(Kind::one_f_one_b, p, 2 * p));
    const double zb_h1 = ideal_bubble_fraction(make_pipeline_shape(Kind::zb_h1, p, 2 * p), unit);
    const double zb_v = ideal_bubble_fraction(make_pipeline_shape(Kind::zb_v, p, 2 * p), unit);
    EXPECT_NEAR(zb_h1, (p - 1.0) / (3 * 2 * p + p - 1), 1e-12);
    EXPECT_LT(zb_h1, one_f_one_b);
    EXPECT_LT(zb_v, zb_h1);
  }
}

TEST(PipelineSchedule, SimulationTakesEachRanksOwnPassTimes) {
  // 1F1B, P = 2, M = 2, stage 1 twice as slow: stage 0 runs F0 [0,1] F1 [1,2], waits for
  // stage 1's B0 (F0 [1,3], B0 [3,5]), B0 [5,6], then for its B1 (F1 [5,7], B1 [7,9]): [9,10].
  const auto shape = make_pipeline_shape(Kind::one_f_one_b, 2, 2);
  const SimulatedPipeline run = simulate_pipeline(
      shape, all_actions(shape), std::vector<PassTimes>{{1, 1, 0}, {2, 2, 0}});
  ASSERT_FALSE(run.deadlocked);
  EXPECT_DOUBLE_EQ(run.makespan, 10.0);
  EXPECT_DOUBLE_EQ(run.busy[0], 4.0);
  EXPECT_DOUBLE_EQ(run.busy[1], 8.0);
}

TEST(PipelineSchedule, ZeroBubbleSchedulesStayAheadOfUnequalPassTimes) {
  // The formulas' time dependence: a heavier W fills more of ZB-H1's bubble.
  const auto shape = make_pipeline_shape(Kind::zb_h1, 4, 8);
  for (const PassTimes& t : {PassTimes{1, 1, 0.5}, PassTimes{1, 1.2, 0.8}, PassTimes{1, 1, 1}}) {
    const SimulatedPipeline run = simulate_pipeline(shape, all_actions(shape), t);
    ASSERT_FALSE(run.deadlocked);
    EXPECT_NEAR(1.0 - run.busy[0] / run.makespan, ideal_bubble_fraction(shape, t), 0.02)
        << "F " << t.forward << " B " << t.input << " W " << t.weight;
  }
}

int64_t largest_stage(const ModelConfig& c, const std::vector<int64_t>& split) {
  const auto units = unit_parameter_counts(c);
  int64_t worst = 0;
  PipelinePartition partition(split);
  for (int s = 0; s < partition.stages(); ++s) {
    int64_t cost = 0;
    for (int u = partition.first_unit(s); u < partition.end_unit(s); ++u) cost += units[u];
    worst = std::max(worst, cost);
  }
  return worst;
}

// Every split of `blocks` into `stages` positive parts, in lexicographic order.
void compositions(int64_t blocks, int stages, std::vector<int64_t>& prefix,
                  const std::function<void(const std::vector<int64_t>&)>& visit) {
  if (stages == 1) {
    prefix.push_back(blocks);
    visit(prefix);
    prefix.pop_back();
    return;
  }
  for (int64_t n = 1; n <= blocks - (stages - 1); ++n) {
    prefix.push_back(n);
    compositions(blocks - n, stages - 1, prefix, visit);
    prefix.pop_back();
  }
}

TEST(PipelinePartition, BalancedSplitIsTheFirstOptimumOfABruteForceSearch) {
  for (int64_t image : {2, 5, 12})
    for (int64_t layers = 1; layers <= 7; ++layers)
      for (int p = 1; p <= layers; ++p) {
        ModelConfig c = small_model(layers);
        c.image_size = image;  // from a light to a heavy embedding
        std::vector<int64_t> best, prefix;
        int64_t best_cost = 0;
        compositions(layers, p, prefix, [&](const std::vector<int64_t>& split) {
          const int64_t cost = largest_stage(c, split);
          if (best.empty() || cost < best_cost) {
            best = split;
            best_cost = cost;
          }
        });
        EXPECT_EQ(balanced_partition(c, p).text(), PipelinePartition(best).text())
            << "S=" << image << " L=" << layers << " P=" << p;
      }
}

TEST(PipelinePartition, TutorialModelSplitsAsExpected) {
  const ModelConfig tutorial;  // H 2048, L 4, S 64: embed ≈ 8.4M, blocks ≈ 33.6M each
  EXPECT_EQ(balanced_partition(tutorial, 2).text(), "2,2");
  // 1,2,1 and 1,1,2 both peak at two blocks; the classifier tips it to 1,2,1.
  EXPECT_EQ(balanced_partition(tutorial, 3).text(), "1,2,1");
  EXPECT_EQ(balanced_partition(tutorial, 4).text(), "1,1,1,1");
  const PipelinePartition p({1, 2, 1});
  EXPECT_EQ(p.unit_names(0), "embed,block0");
  EXPECT_EQ(p.unit_names(1), "block1..2");
  EXPECT_EQ(p.unit_names(2), "block3,classifier");
  EXPECT_EQ(p.first_unit(1), 2);
  EXPECT_EQ(p.end_unit(2), 6);
}

TEST(PipelinePartition, BadPartitionsAndTooManyStagesAreInputErrors) {
  const ModelConfig c = small_model(4);
  EXPECT_EQ(parse_partition("1,2,1", c, 3).text(), "1,2,1");
  EXPECT_THROW(parse_partition("1,1,1", c, 3), InputError);  // 3 of 4 blocks
  EXPECT_THROW(parse_partition("1,2", c, 3), InputError);    // 2 stages for --pp 3
  EXPECT_THROW(parse_partition("0,3,1", c, 3), InputError);  // an empty stage
  EXPECT_THROW(parse_partition("1,,3", c, 3), InputError);
  EXPECT_THROW(parse_partition("1,2,1x", c, 3), InputError);
  EXPECT_THROW(balanced_partition(c, 5), InputError);
  EXPECT_EQ(balanced_partition(small_model(0), 1).text(), "0");  // one stage needs no block
}

TEST(PipelineGrid, GridsAreResolvedAndCheckedBeforeAnyWork) {
  const ModelConfig c = small_model(4);
  PipelineOptions o;
  PipelineGrid l = resolve_pipeline_grid(o, c, 32, 4);  // default: every rank a stage
  EXPECT_EQ(l.stages, 4);
  EXPECT_EQ(l.replicas, 1);
  o.dp = 2;
  o.micro_batches = 8;
  l = resolve_pipeline_grid(o, c, 32, 4);
  EXPECT_EQ(l.stages, 2);
  EXPECT_EQ(l.rank_of(1, 1), 3);
  EXPECT_EQ(l.stage_of(3), 1);
  EXPECT_EQ(l.replica_of(3), 1);
  EXPECT_EQ(l.replica_rows(32, 1).first, 16);
  EXPECT_EQ(l.grid(), "pp=2,dp=2,micro_batches=8,schedule=1f1b,partition=2,2");
  o.micro_batches = 3;  // does not divide 16 rows
  EXPECT_THROW(resolve_pipeline_grid(o, c, 32, 4), InputError);
  o = PipelineOptions{};
  o.pp = 3;
  EXPECT_THROW(resolve_pipeline_grid(o, c, 32, 4), InputError);  // 3 does not divide 4
  o.dp = 2;
  EXPECT_THROW(resolve_pipeline_grid(o, c, 32, 6 + 1), InputError);  // 3 x 2 != 7
  o = PipelineOptions{};
  o.dp = 4;
  o.micro_batches = 1;
  EXPECT_THROW(resolve_pipeline_grid(o, c, 3, 4), InputError);  // a replica without rows
  o.schedule = "zigzag";
  EXPECT_THROW(resolve_pipeline_grid(o, c, 32, 4), InputError);
}

}  // namespace
}  // namespace mlps

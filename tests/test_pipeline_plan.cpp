// Pipeline parallelism without MPI, the plan: the schedules (order, activation slots, and a
// simulated run reaching the ideal makespan), the cost-balanced partition against brute force
// and the grid checks. The stages themselves: test_pipeline_stage.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <tuple>

#include "src/errors.h"
#include "src/schemes/pipeline_layout.h"
#include "tests/small_pipeline_model.h"

namespace mlps {
namespace {

using Pass = PipelineAction::Pass;
constexpr PipelineScheduleKind kKinds[] = {PipelineScheduleKind::gpipe,
                                           PipelineScheduleKind::one_f_one_b};

TEST(PipelineSchedule, EveryStageRunsEachPassOnceInOrderWithinItsActivationBudget) {
  for (auto kind : kKinds)
    for (int p = 1; p <= 5; ++p)
      for (int m = 1; m <= 9; ++m)
        for (int s = 0; s < p; ++s) {
          SCOPED_TRACE(std::string(to_string(kind)) + " P=" + std::to_string(p) +
                       " M=" + std::to_string(m) + " s=" + std::to_string(s));
          const auto actions = stage_actions(kind, s, p, m);
          ASSERT_EQ(actions.size(), static_cast<size_t>(2 * m));
          int forwards = 0, backwards = 0, most = 0;
          for (const auto& a : actions) {
            if (a.pass == Pass::forward) {
              EXPECT_EQ(a.micro_batch, forwards++);
            } else {
              EXPECT_EQ(a.micro_batch, backwards++);
              EXPECT_LT(a.micro_batch, forwards) << "backward before its forward";
            }
            most = std::max(most, forwards - backwards);
          }
          EXPECT_EQ(most, max_in_flight(kind, s, p, m));
        }
}

TEST(PipelineSchedule, OneFOneBWarmsUpWithPMinusSMinusOneForwards) {
  const auto actions = stage_actions(PipelineScheduleKind::one_f_one_b, 1, 4, 8);
  const std::vector<PipelineAction> start{{Pass::forward, 0}, {Pass::forward, 1},
                                          {Pass::forward, 2}, {Pass::backward, 0},
                                          {Pass::forward, 3}, {Pass::backward, 1}};
  EXPECT_TRUE(std::equal(start.begin(), start.end(), actions.begin()));
  EXPECT_EQ(max_in_flight(PipelineScheduleKind::one_f_one_b, 1, 4, 8), 3);
  EXPECT_EQ(max_in_flight(PipelineScheduleKind::gpipe, 1, 4, 8), 8);
  EXPECT_EQ(max_in_flight(PipelineScheduleKind::one_f_one_b, 0, 4, 2), 2);
}

// Runs every stage's action list with forward time f and backward time b, each action
// starting when its stage is free and its input (the previous stage's forward, the next
// stage's backward) is done. Returns the makespan; fails on a deadlock.
double simulate(PipelineScheduleKind kind, int p, int m, double f, double b) {
  std::vector<std::vector<PipelineAction>> lists;
  for (int s = 0; s < p; ++s) lists.push_back(stage_actions(kind, s, p, m));
  std::map<std::tuple<int, int, int>, double> done;  // (stage, pass, micro-batch) → end time
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < p; ++s) {
      if (next[s] == lists[s].size()) continue;
      const PipelineAction a = lists[s][next[s]];
      const bool forward = a.pass == Pass::forward;
      double ready = free_at[s];
      const int from = forward ? s - 1 : s + 1;
      if (from >= 0 && from < p) {
        const auto it = done.find({from, forward ? 0 : 1, a.micro_batch});
        if (it == done.end()) continue;  // not yet
        ready = std::max(ready, it->second);
      }
      free_at[s] = ready + (forward ? f : b);
      done[{s, forward ? 0 : 1, a.micro_batch}] = free_at[s];
      ++next[s];
      progressed = true;
    }
  }
  for (int s = 0; s < p; ++s) EXPECT_EQ(next[s], lists[s].size()) << "deadlock at stage " << s;
  return *std::max_element(free_at.begin(), free_at.end());
}

TEST(PipelineSchedule, BalancedStagesReachTheIdealBubble) {
  for (auto kind : kKinds)
    for (int p = 1; p <= 5; ++p)
      for (int m = 1; m <= 9; ++m) {
        const double f = 1.0, b = 2.0;
        const double makespan = simulate(kind, p, m, f, b);
        EXPECT_DOUBLE_EQ(makespan, (m + p - 1) * (f + b)) << to_string(kind) << " P=" << p << " M=" << m;
        // Each stage computes M·(f + b), so its idle share is (P − 1)/(M + P − 1).
        EXPECT_NEAR(1.0 - m * (f + b) / makespan, ideal_bubble_fraction(p, m), 1e-12);
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

TEST(PipelineLayout, GridsAreResolvedAndCheckedBeforeAnyWork) {
  const ModelConfig c = small_model(4);
  PipelineOptions o;
  PipelineLayout l = resolve_pipeline_layout(o, c, 32, 4);  // default: every rank a stage
  EXPECT_EQ(l.stages, 4);
  EXPECT_EQ(l.replicas, 1);
  o.dp = 2;
  o.micro_batches = 8;
  l = resolve_pipeline_layout(o, c, 32, 4);
  EXPECT_EQ(l.stages, 2);
  EXPECT_EQ(l.rank_of(1, 1), 3);
  EXPECT_EQ(l.stage_of(3), 1);
  EXPECT_EQ(l.replica_of(3), 1);
  EXPECT_EQ(l.replica_rows(32, 1).first, 16);
  EXPECT_EQ(l.grid(), "pp=2,dp=2,micro_batches=8,schedule=1f1b,partition=2,2");
  o.micro_batches = 3;  // does not divide 16 rows
  EXPECT_THROW(resolve_pipeline_layout(o, c, 32, 4), InputError);
  o = PipelineOptions{};
  o.pp = 3;
  EXPECT_THROW(resolve_pipeline_layout(o, c, 32, 4), InputError);  // 3 does not divide 4
  o.dp = 2;
  EXPECT_THROW(resolve_pipeline_layout(o, c, 32, 6 + 1), InputError);  // 3 x 2 != 7
  o = PipelineOptions{};
  o.dp = 4;
  o.micro_batches = 1;
  EXPECT_THROW(resolve_pipeline_layout(o, c, 3, 4), InputError);  // a replica without rows
  o.schedule = "zigzag";
  EXPECT_THROW(resolve_pipeline_layout(o, c, 32, 4), InputError);
}

}  // namespace
}  // namespace mlps

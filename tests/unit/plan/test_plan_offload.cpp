// bin/plan's offloaded configurations (plan/offload_weighing.h): weighed when nothing fits in
// memory and the description prices them, the host tier's update at host_offload_bandwidth.
#include <gtest/gtest.h>

#include <algorithm>

#include "src/plan/offload_weighing.h"
#include "tests/plan_test_inputs.h"

namespace mlps {
namespace {

std::vector<PlannedCandidate> planned(const Options& o, int world, const MachineDescription& m) {
  std::vector<PlannedCandidate> plan;
  for (PlanCandidate& c : enumerate_candidates(o, world, {Precision::fp32})) {
    StepPrediction p = predict_step(c, m);
    plan.push_back({std::move(c), std::move(p)});
  }
  return plan;
}

size_t offloaded(const std::vector<PlannedCandidate>& plan, const std::string& tier) {
  return static_cast<size_t>(std::count_if(plan.begin(), plan.end(), [&](const auto& p) {
    return p.candidate.label().find("--offload-to " + tier) != std::string::npos;
  }));
}

// A GPU node (its ranks do not share the node's rates) whose memory holds the small model's
// parameters and gradients but not its optimizer state.
MachineDescription gpu_node(double memory_bytes) {
  MachineDescription m = test_machine(4);
  m.ranks_share_node = false;
  m.memory_bytes = memory_bytes;
  m.host_offload_bandwidth = 1e9;
  return m;
}

TEST(PlanOffload, WhatFitsInMemoryLeavesNoOffloadedRow) {
  std::vector<PlannedCandidate> plan = planned(small_options(), 4, gpu_node(1e12));
  ASSERT_GT(offloaded(plan, "host"), 0u);
  EXPECT_EQ(weigh_offloaded(plan, gpu_node(1e12)), "");
  EXPECT_EQ(offloaded(plan, "host") + offloaded(plan, "disk"), 0u);
}

// Memory per rank just under what the leanest configuration in memory needs.
double just_too_little(const Options& o, int world) {
  double leanest = 1e300;
  for (const PlannedCandidate& p : planned(o, world, gpu_node(1e12)))
    if (p.candidate.label().find("--offload") == std::string::npos)
      leanest = std::min(leanest, p.prediction.memory.total());
  return leanest * 0.999;
}

// Many small units: the optimizer state is a larger share of a rank's memory than ZeRO-3's
// gathered buffers.
Options deep_options() {
  Options o = small_options();
  o.model.hidden = 256;
  o.model.layers = 32;
  return o;
}

TEST(PlanOffload, NothingInMemoryFitsSoTheHostTierIsWeighedAndPriced) {
  const Options o = deep_options();
  MachineDescription m = gpu_node(just_too_little(o, 4));
  std::vector<PlannedCandidate> plan = planned(o, 4, m);
  const std::string line = weigh_offloaded(plan, m);
  EXPECT_NE(line.find("nothing fits in memory"), std::string::npos) << line;
  EXPECT_EQ(offloaded(plan, "disk"), 0u);  // a GPU's tier is the host
  const auto zero3 = std::find_if(plan.begin(), plan.end(), [](const auto& p) {
    return p.candidate.label().rfind("data --zero 3 --offload optimizer --offload-to host", 0) == 0;
  });
  ASSERT_NE(zero3, plan.end());
  EXPECT_TRUE(zero3->prediction.fits()) << zero3->prediction.memory.breakdown();
  EXPECT_GT(zero3->prediction.memory.host, 0.0);
  // The shard's gradients down and values up, 4 + 4 bytes an element, at the node's rate shared
  // by its 4 ranks.
  const double shard = static_cast<double>(parameter_count(o.model)) / 4;
  EXPECT_DOUBLE_EQ(zero3->prediction.optimizer, shard * 8 / (1e9 / 4));
}

TEST(PlanOffload, ADescriptionWithoutTheRateWeighsNone) {
  const Options o = deep_options();
  MachineDescription m = gpu_node(just_too_little(o, 4));
  m.host_offload_bandwidth = 0;
  std::vector<PlannedCandidate> plan = planned(o, 4, m);
  EXPECT_NE(weigh_offloaded(plan, m).find("no host_offload_bandwidth"), std::string::npos);
  EXPECT_EQ(offloaded(plan, "host") + offloaded(plan, "disk"), 0u);
}

}  // namespace
}  // namespace mlps

// The small model and the made-up machine bin/plan's tests price, and one candidate's prediction.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/options/options.h"
#include "src/plan/machine_description.h"
#include "src/plan/plan_candidates.h"
#include "src/schemes/scheme_registry.h"
#include "src/plan/step_prediction.h"

namespace mlps {

inline Options small_options() {
  Options o;
  o.model.hidden = 64;
  o.model.layers = 4;
  o.model.image_size = 8;
  o.batch = 32;
  return o;
}

inline MachineDescription test_machine(int ranks_per_node) {
  MachineDescription m;
  m.name = "test";
  m.ranks_per_node = ranks_per_node;
  m.memory_bytes = 1e12;
  m.gemm_fp32_flops = 1e12;
  m.gemm_fp64_flops = 5e11;
  m.memory_bandwidth = 1e11;
  m.optimizer_bandwidth = 2e11;
  m.intra_node = {1e-6, 1e11};
  m.inter_node = {5e-6, 1e10};
  return m;
}

// The candidate labelled `label` (as bin/plan's table prints it), or null.
inline const PlanCandidate* find(const std::vector<PlanCandidate>& all, const std::string& label) {
  for (const PlanCandidate& c : all)
    if (c.label() == label) return &c;
  return nullptr;
}

// The prediction of the fp32 candidate of the small model on `world` ranks labelled `label`; a
// test failure when there is none.
inline StepPrediction predict(const std::string& label, int world, const MachineDescription& m,
                              const Options& options = small_options()) {
  const auto all = enumerate_candidates(options, world, {Precision::fp32});
  const PlanCandidate* c = find(all, label);
  if (c) return predict_step(*c, m);
  ADD_FAILURE() << "no candidate " << label;
  return {};
}

}  // namespace mlps

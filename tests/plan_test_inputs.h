// The small model and the made-up machine bin/plan's tests price.
#pragma once

#include "src/options.h"
#include "src/plan/machine_description.h"

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

}  // namespace mlps

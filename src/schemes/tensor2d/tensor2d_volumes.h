#pragma once
// The communication of one bin/tensor2d training step (with `inference`, of one evaluate() of a
// global batch) for the rank at (replica, grid row, grid column), from the configuration alone:
// nccl-tests sizes as CommLog records them, keyed as the result file's /comm groups. The
// formulas, with checkpointing's and inference's, are docs/tensor2d.md's.
// element_bytes is an element's size on the wire (2 for bf16/fp16 payloads; the caller prices
// "data" at 4 with --fp32-grad-comm). `calls`: where given, each kind's calls are added.
#include <cstddef>
#include <map>
#include <string>

#include "src/comm/comm_volume_report.h"
#include "src/model/model_config.h"
#include "src/schemes/tensor2d/tensor2d_grid.h"

namespace mlps {

struct GridPosition {
  int replica = 0, row = 0, column = 0;
};

std::map<std::string, double> tensor2d_volumes(const ModelConfig& model, int64_t global_batch,
                                               const Tensor2dGrid& shape, size_t element_bytes,
                                               const GridPosition& at = {},
                                               bool inference = false,
                                               CommCalls* calls = nullptr);

}  // namespace mlps

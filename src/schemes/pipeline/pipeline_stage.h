#pragma once
// One pipeline stage: FC_Net (src/model/fc_net.h) running a contiguous run of its units (see
// PipelinePartition) on serial layers, with storage for only those units' parameters and
// gradients. Each micro-batch's activations are a StageActivations the caller makes
// (make_activations) and frees when that micro-batch's backward is done: a GPipe stage holds
// M of them, a 1F1B stage P − s. T = bf16 or fp16 is typed 16-bit storage (values and
// activations 16-bit, gradients fp32).
#include <vector>

#include "src/model/serial_net.h"

namespace mlps {

template <typename T>
using StageActivations = NetActivations<T>;

template <typename T>
class PipelineStage : public SerialNet<T> {
 public:
  // Builds every parameter of FC_Net (names, tensor ids and shapes) but gives storage only to
  // those of units [first_unit, end_unit), initialised from `seed`, in one flat value buffer
  // and one flat gradient buffer in tensor order. No pass may have more than micro_rows rows.
  PipelineStage(Device& device, const ModelConfig& config, int first_unit, int end_unit,
                int64_t micro_rows, uint64_t seed);

  // This stage's parameters and gradients (fp32 beside typed 16-bit values), flat in tensor
  // order.
  T* values() { return values_.data(); }
  Acc<T>* grads() { return grads_.data(); }
  int64_t parameter_elements() const { return values_.size(); }
  // Typed 16-bit storage: the fp32 initial values, flat as values(), where the optimizer's
  // master starts (as the emulation's does); handed over once, empty for float and double.
  std::vector<Acc<T>> take_master_start() { return std::move(master_start_); }

 private:
  Buffer<T> values_;
  Buffer<Acc<T>> grads_;
  std::vector<Acc<T>> master_start_;
};

}  // namespace mlps

#include "src/schemes/pipeline/pipeline_stage.h"

namespace mlps {

template <typename T>
PipelineStage<T>::PipelineStage(Device& device, const ModelConfig& config, int first_unit,
                                int end_unit, int64_t micro_rows, uint64_t seed)
    : SerialNet<T>(device, config, micro_rows, StageUnits{first_unit, end_unit}) {
  std::vector<Parameter<T>*> params;
  for (int unit = first_unit; unit < end_unit; ++unit)
    for (Parameter<T>* p : this->unit_parameters(unit)) params.push_back(p);
  int64_t elements = 0;
  for (const Parameter<T>* p : params) elements += p->size();
  values_ = Buffer<T>(device, elements);
  grads_ = Buffer<Acc<T>>(device, elements);
  grads_.zero();
  // Computed once at the accumulator's width: the values are these rounded to T.
  std::vector<Acc<T>> start(static_cast<size_t>(elements));
  int64_t offset = 0;
  for (Parameter<T>* p : params) {
    fill_initial_shard(start.data() + offset, p->cols, seed, p->tensor_id, p->init, p->fan_in, 0,
                       p->rows, 0, p->cols);
    p->value = Buffer<T>::view(device, values_.data() + offset, p->size());
    p->grad = Buffer<Acc<T>>::view(device, grads_.data() + offset, p->size());
    offset += p->size();
  }
  values_.upload(stored_from<T>(start));
  if constexpr (is_16bit_v<T>) master_start_ = std::move(start);
}

template class PipelineStage<float>;
template class PipelineStage<double>;
template class PipelineStage<bf16>;
template class PipelineStage<fp16>;

}  // namespace mlps

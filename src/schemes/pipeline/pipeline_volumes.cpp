#include "src/schemes/pipeline/pipeline_volumes.h"

#include <vector>

namespace mlps {

int64_t pipeline_rank_parameters(const ModelConfig& model, const PipelineGrid& layout,
                                 int stage) {
  const std::vector<int64_t> units = unit_parameter_counts(model);
  const PipelineShape shape = layout.shape();
  int64_t count = 0;
  for (int vs = 0; vs < shape.virtual_stages(); ++vs)
    if (shape.rank_of(vs) == stage)
      for (int u = layout.partition.first_unit(vs); u < layout.partition.end_unit(vs); ++u)
        count += units[u];
  return count;
}

std::map<std::string, double> pipeline_comm_bytes(const ModelConfig& model,
                                                  const PipelineGrid& layout,
                                                  int64_t global_batch, int rank,
                                                  size_t element_bytes,
                                                  size_t grad_element_bytes, bool inference,
                                                  CommCalls* calls) {
  std::map<std::string, double> bytes;
  const PipelineShape shape = layout.shape();
  const int stage = layout.stage_of(rank);
  const int last = shape.virtual_stages() - 1;
  int remote = 0;  // boundaries between this rank's virtual stages and another rank's
  for (int vs = 0; vs <= last; ++vs) {
    if (shape.rank_of(vs) != stage) continue;
    remote += (vs > 0 && shape.rank_of(vs - 1) != stage) +
              (vs < last && shape.rank_of(vs + 1) != stage);
  }
  const double rows = static_cast<double>(layout.replica_rows(global_batch,
                                                              layout.replica_of(rank)).count);
  const double messages = (inference ? 1 : 2) * remote;  // per micro-batch
  if (layout.stages > 1)
    add_volume(bytes, calls, "sendrecv:pipe",
               messages * rows * static_cast<double>(model.hidden * element_bytes),
               messages * layout.micro_batches);
  if (layout.replicas > 1 && !inference)
    add_volume(bytes, calls, "allreduce:data",
               static_cast<double>(pipeline_rank_parameters(model, layout, stage)) *
                   static_cast<double>(grad_element_bytes),
               layout.chunks);
  return bytes;
}

}  // namespace mlps

#include "src/schemes/pipeline/pipeline_grid.h"

#include "src/base/errors.h"

namespace mlps {

std::string PipelineGrid::grid() const {
  return "pp=" + std::to_string(stages) + ",dp=" + std::to_string(replicas) +
         ",micro_batches=" + std::to_string(micro_batches) + ",schedule=" + to_string(schedule) +
         (schedule == PipelineScheduleKind::interleaved
              ? ",virtual_stages=" + std::to_string(chunks)
              : "") +
         ",partition=" + partition.text();
}

namespace {

// P and D from --pp and --dp, either of which may be left to the world size.
void resolve_grid(const PipelineOptions& o, int ranks, int& stages, int& replicas) {
  const std::string world = std::to_string(ranks) + " ranks";
  if (o.pp > 0 && o.dp > 0 && static_cast<int64_t>(o.pp) * o.dp != ranks)
    throw InputError("--pp " + std::to_string(o.pp) + " x --dp " + std::to_string(o.dp) + " = " +
                     std::to_string(static_cast<int64_t>(o.pp) * o.dp) + " does not match the " +
                     world);
  if (o.pp > 0 && o.dp == 0 && ranks % o.pp != 0)
    throw InputError("--pp " + std::to_string(o.pp) + " does not divide the " + world);
  if (o.dp > 0 && o.pp == 0 && ranks % o.dp != 0)
    throw InputError("--dp " + std::to_string(o.dp) + " does not divide the " + world);
  stages = o.pp > 0 ? o.pp : o.dp > 0 ? ranks / o.dp : ranks;
  replicas = ranks / stages;
}

}  // namespace

void check_pipeline_flags(const PipelineOptions& o) {
  if (o.micro_batches < 1)
    throw InputError("--micro-batches must be at least 1, not " + std::to_string(o.micro_batches));
  if (o.virtual_stages < 1)
    throw InputError("--virtual-stages must be at least 1, not " +
                     std::to_string(o.virtual_stages));
  if (o.virtual_stages > 1 && parse_pipeline_schedule(o.schedule) !=
                                  PipelineScheduleKind::interleaved)
    throw InputError("--virtual-stages " + std::to_string(o.virtual_stages) +
                     " needs --schedule interleaved (not " + o.schedule + ")");
  if (!o.partition.empty()) partition_blocks(o.partition);
}

PipelineGrid resolve_pipeline_grid(const PipelineOptions& o, const ModelConfig& model,
                                       int64_t global_batch, int ranks) {
  PipelineGrid layout;
  resolve_grid(o, ranks, layout.stages, layout.replicas);
  check_pipeline_flags(o);
  layout.schedule = parse_pipeline_schedule(o.schedule);
  layout.micro_batches = o.micro_batches;
  if (layout.schedule == PipelineScheduleKind::interleaved &&
      layout.micro_batches % layout.stages != 0)
    throw InputError("--schedule interleaved needs --micro-batches a multiple of --pp " +
                     std::to_string(layout.stages) + ", not " +
                     std::to_string(layout.micro_batches));
  layout.chunks = make_pipeline_shape(layout.schedule, layout.stages, layout.micro_batches,
                                      o.virtual_stages)
                      .chunks;
  const int virtual_stages = layout.stages * layout.chunks;
  if (layout.chunks > 1 && virtual_stages > model.layers)
    throw InputError("--schedule " + o.schedule + " with --pp " + std::to_string(layout.stages) +
                     " runs " + std::to_string(virtual_stages) + " virtual stages (" +
                     std::to_string(layout.chunks) + " chunks per rank), more than the " +
                     std::to_string(model.layers) + " blocks (--layers): each needs one");
  layout.partition_given = !o.partition.empty();
  layout.partition = layout.partition_given ? parse_partition(o.partition, model, virtual_stages)
                                            : balanced_partition(model, virtual_stages);
  const std::string batch = " (--batch " + std::to_string(global_batch) + " over --dp " +
                            std::to_string(layout.replicas) + ")";
  if (global_batch < layout.replicas)
    throw InputError("--batch " + std::to_string(global_batch) + " leaves some of the " +
                     std::to_string(layout.replicas) + " pipeline replicas without samples");
  for (int d = 0; d < layout.replicas; ++d) {
    const int64_t rows = layout.replica_rows(global_batch, d).count;
    if (rows % layout.micro_batches != 0) {
      const bool even = global_batch % layout.replicas == 0;
      throw InputError("--micro-batches " + std::to_string(layout.micro_batches) +
                       " does not divide the " + std::to_string(rows) + " rows of " +
                       (even ? "each pipeline replica" : "pipeline replica " + std::to_string(d)) +
                       batch);
    }
  }
  return layout;
}

}  // namespace mlps

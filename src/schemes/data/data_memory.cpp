#include "src/schemes/data/data_memory.h"

#include <algorithm>
#include <vector>

#include "src/base/balanced_split.h"
#include "src/memory/model_memory.h"
#include "src/optim/offloaded_state.h"

namespace mlps {

namespace {

// --offload optimizer: the optimizer state moves to disk, and the update streams it through two
// staging buffers of kOffloadChunkBytes per state array (fewer when the shard is smaller).
void account_offload(MemoryNeed& need, const Options& o, double optimized, bool offloaded) {
  const double state = need.optimizer;
  const double arrays = state / std::max(1.0, optimized * element_sizes(o.precision, true).kept);
  const double staging =
      2 * arrays * std::min(static_cast<double>(kOffloadChunkBytes),
                            optimized * element_sizes(o.precision, true).kept);
  if (!offloaded) {
    need.offloadable = std::max(0.0, state - staging);
    return;
  }
  need.disk = state;
  need.optimizer = 0;
  need.buffers += staging;
}

}  // namespace

MemoryNeed data_memory(const Options& o, int ranks, const DataGrid& config) {
  MemoryNeed need;
  const bool offloaded = !config.offload_dir.empty();
  const double p = as_double(parameter_count(o.model));
  const double shard = p / ranks;
  const int64_t rows = largest_part(o.batch, ranks);
  const ElementSizes sizes = element_sizes(o.precision, true);  // bf16, fp16: typed storage
  need.activations = replica_activation_bytes(o.model, rows, full_widths(o.model), sizes);
  need.buffers = typed_scratch_bytes(o, rows, true);
  if (config.zero == 3) {
    // The rank's 1/G shard of values and gradients, and per unit of the model the gathered
    // values and the gradients being reduce-scattered: the unit computing and its neighbour
    // (prefetch and the reduction still in flight with overlap). With G = 1 < N the shard is
    // the whole model, computed with in place: nothing more (one rank alone runs plain ZeRO-3).
    const int group = config.shard_group > 0 ? config.shard_group : ranks;
    add_parameter_state(need, p / group, p / group, o.optimizer, o.precision, true);
    account_offload(need, o, p / group, offloaded);
    if (group == 1 && ranks > 1) return need;
    // Each unit's gathered values and the gradients it reduce-scatters live in kept buffers of
    // the largest unit's size (padded to G): two of each with overlap (the unit computing and
    // its neighbour being gathered or reduced), one without (fully_sharded_trainer.h).
    int64_t largest = 0;
    for (int64_t count : unit_parameter_counts(o.model))
      largest = std::max(largest, (count + group - 1) / group * group);
    need.buffers += (config.overlap ? 2 : 1) * as_double(largest) * (sizes.stored + sizes.kept);
    return need;
  }
  // Flat values (and gradients, but for ZeRO 2) for the whole model; ZeRO 1 and 2 add this
  // rank's shard of values and gradients, which the optimizer updates.
  add_parameter_state(need, p, config.zero == 0 ? p : shard, o.optimizer, o.precision, true);
  if (config.zero >= 1) account_offload(need, o, shard, offloaded);
  if (config.zero >= 1) need.buffers += shard * (sizes.stored + sizes.kept);
  if (config.zero == 2 && config.overlap) {
    // Gradients live per bucket while reduce-scattered: the buckets the unit in backward writes
    // (its bytes and about a bucket at its ends) and one still in flight; all without overlap.
    const double bucket = config.bucket_mb * 1024 * 1024;
    const std::vector<int64_t> units = unit_parameter_counts(o.model);
    const double largest_unit = as_double(*std::max_element(units.begin(), units.end()));
    need.gradients = std::min(p * sizes.kept, largest_unit * sizes.kept + 2 * bucket);
  }
  return need;
}

}  // namespace mlps

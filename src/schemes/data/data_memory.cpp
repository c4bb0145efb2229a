#include "src/schemes/data/data_memory.h"

#include <algorithm>
#include <vector>

#include "src/base/balanced_split.h"
#include "src/device/device.h"
#include "src/memory/model_memory.h"
#include "src/optim/offloaded_state.h"
#include "src/options/options.h"

namespace mlps {

namespace {

// --offload optimizer: what leaves memory and what stays to move it. The state arrays are
// Optimizer::state_arrays(): Adam's two moments, and the fp32 master of 16-bit storage, or of
// every precision offloaded from a GPU (its host keeps one). On disk they stream through two
// staging buffers of kOffloadChunkBytes per array (less for a smaller shard), in host memory;
// a GPU adds DeviceExchange's pinned staging, two chunks each way. With the parameters
// offloaded too (`params`) the master is kept in every precision.
void account_offload(MemoryNeed& need, const Options& o, double optimized, OffloadTier tier,
                     bool params = false) {
  const bool gpu = (o.device == "cuda" ? DeviceKind::cuda : resolve_device(o.device)) ==
                   DeviceKind::cuda;
  const ElementSizes sizes = element_sizes(o.precision, true);
  const bool mixed = storage_format(o.precision) != StorageFormat::full;
  const double arrays =
      (o.optimizer.kind == OptimizerKind::adam ? 2 : 0) + (mixed || gpu || params ? 1 : 0);
  const double chunk_bytes =
      std::min(static_cast<double>(kOffloadChunkBytes), optimized * sizes.kept);
  const double disk_staging = 2 * arrays * chunk_bytes;
  const double exchange_staging =
      gpu ? 2 * static_cast<double>(kOffloadChunkBytes) * (1 + sizes.stored / sizes.kept) : 0;
  const double state = optimized * arrays * sizes.kept;
  // fp16's count of non-finite gradients stays on the device.
  const double in_memory =
      need.optimizer - (o.precision == Precision::fp16 ? sizeof(uint64_t) : 0);
  if (tier == OffloadTier::none) {
    // On a GPU the host takes all of it; on the CPU the staging stays.
    need.offloadable = gpu ? in_memory : std::max(0.0, in_memory - disk_staging);
    return;
  }
  need.optimizer -= in_memory;
  if (tier == OffloadTier::disk) {
    need.disk = state;
    (gpu ? need.host : need.buffers) += disk_staging;
  } else {
    need.host += state;
  }
  need.host += exchange_staging;
}

// --offload optimizer+params (ZeRO-3): the shard's values leave the device for the optimizer's
// tier; a unit's shard comes back into kept device buffers of the largest unit's shard, as many
// as gathered units (the gather's input; G = 1 < N computes in them, its shard the whole unit).
// On disk a shard is read whole into host staging and each updated chunk written through a
// chunk's; the CPU backend's update writes its chunk of values into a buffer of its own.
void account_offloaded_values(MemoryNeed& need, const Options& o, double shard, int group,
                              int64_t largest, const DataGrid& config) {
  const ElementSizes sizes = element_sizes(o.precision, true);
  const bool gpu = (o.device == "cuda" ? DeviceKind::cuda : resolve_device(o.device)) ==
                   DeviceKind::cuda;
  const double values = shard * sizes.stored;
  need.parameters -= values;
  (config.offload == OffloadTier::disk ? need.disk : need.host) += values;
  const double units = config.overlap ? 2 : 1;
  const double largest_shard = as_double(largest / group) * sizes.stored;
  need.buffers += units * largest_shard;
  const double chunk = static_cast<double>(kOffloadChunkBytes) / sizes.kept * sizes.stored;
  double staging = gpu ? 0 : chunk;
  if (config.offload == OffloadTier::disk) staging += largest_shard + chunk;
  (gpu ? need.host : need.buffers) += staging;
}

}  // namespace

MemoryNeed data_memory(const Options& o, int ranks, const DataGrid& config) {
  MemoryNeed need;
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
    // the whole model, computed with in place: nothing more, unless it is offloaded (one rank
    // alone runs plain ZeRO-3).
    const int group = config.shard_group > 0 ? config.shard_group : ranks;
    add_parameter_state(need, p / group, p / group, o.optimizer, o.precision, true);
    const bool params = config.offload_params && config.offload != OffloadTier::none;
    account_offload(need, o, p / group, config.offload, params);
    int64_t largest = 0;
    for (int64_t count : unit_parameter_counts(o.model))
      largest = std::max(largest, (count + group - 1) / group * group);
    if (params) account_offloaded_values(need, o, p / group, group, largest, config);
    if (group == 1 && ranks > 1) return need;
    // Each unit's gathered values and the gradients it reduce-scatters live in kept buffers of
    // the largest unit's size (padded to G): two of each with overlap (the unit computing and
    // its neighbour being gathered or reduced), one without (fully_sharded_trainer.h).
    need.buffers += (config.overlap ? 2 : 1) * as_double(largest) * (sizes.stored + sizes.kept);
    return need;
  }
  // Flat values (and gradients, but for ZeRO 2) for the whole model; ZeRO 1 and 2 add this
  // rank's shard of values and gradients, which the optimizer updates.
  add_parameter_state(need, p, config.zero == 0 ? p : shard, o.optimizer, o.precision, true);
  if (config.zero >= 1) account_offload(need, o, shard, config.offload);
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

#include "src/schemes/data/data_volumes.h"

#include "src/schemes/data/gradient_bucketer.h"

namespace mlps {

std::map<std::string, double> data_comm_bytes(const ModelConfig& model,
                                              const DataGrid& config, int ranks,
                                              size_t storage_bytes, size_t wire_bytes,
                                              bool inference, CommCalls* calls,
                                              size_t gathered_bytes) {
  const auto b = static_cast<double>(wire_bytes);
  const auto gathered = static_cast<double>(gathered_bytes > 0 ? gathered_bytes : wire_bytes);
  std::map<std::string, double> bytes;
  if (config.zero < 3) {
    if (inference) return bytes;  // every rank holds the whole model
    // DDP: every gradient once; ZeRO-1/2: each bucket, padded to the ranks, reduce-scattered
    // and its updated values all-gathered.
    const GradientBucketer buckets =
        ddp_buckets(parameter_tensor_sizes(model), config.bucket_mb, storage_bytes,
                    config.zero >= 1 ? ranks : 1);
    const double elements = static_cast<double>(buckets.total_elements());
    const auto count = static_cast<double>(buckets.buckets().size());
    if (config.zero == 0) {
      add_volume(bytes, calls, "allreduce", elements * b, count);
    } else {
      add_volume(bytes, calls, "reduce_scatter", elements * b, count);
      add_volume(bytes, calls, "allgather", elements * gathered, count);
    }
    return bytes;
  }
  // ZeRO-3 over groups of G: each unit padded to a multiple of G is all-gathered before its
  // forward and its backward and its gradients reduce-scattered within the group, then the
  // rank's 1/G all-reduced across the N/G groups. The group of all ranks is "world" (bare
  // kinds), a group of one rank among several has no communicator.
  const int group = config.shard_group > 0 ? config.shard_group : ranks;
  double units = 0;
  for (int64_t u : unit_parameter_counts(model))
    units += static_cast<double>((u + group - 1) / group * group);
  const double passes = inference ? 1 : 2, count = unit_count(model);
  if (group > 1 || ranks == 1) {
    const std::string suffix = group == ranks ? "" : ":shard";
    add_volume(bytes, calls, "allgather" + suffix, passes * units * gathered, passes * count);
    if (!inference) add_volume(bytes, calls, "reduce_scatter" + suffix, units * b, count);
  }
  if (group < ranks && !inference)
    add_volume(bytes, calls, group == 1 ? "allreduce" : "allreduce:data", units / group * b, count);
  return bytes;
}

}  // namespace mlps

#pragma once
// bin/data's communication volumes (docs/data-parallel.md), from the configuration alone:
// what each rank moves per training iteration, or with `inference` per forward pass, in
// nccl-tests sizes, keyed as the results store them ("allreduce", "allgather:shard", ...).
#include <cstddef>
#include <map>
#include <string>

#include "src/comm/comm_volume_report.h"
#include "src/model/model_config.h"
#include "src/schemes/data/data_grid.h"

namespace mlps {

// config.shard_group resolved (resolve_shard_group). storage_bytes: an element of the model's
// gradients (it sizes the gradient buckets); wire_bytes: an element as the collectives send it.
// `calls`: where given, each kind's calls are added (one per bucket; ZeRO-3: per unit).
// `gathered_bytes`: an element of the all-gathered values (ZeRO 1-3) where it is not wire_bytes
// (typed 16-bit values go as they are, whatever the gradients' wire); 0: wire_bytes.
std::map<std::string, double> data_comm_bytes(const ModelConfig& model,
                                              const DataGrid& config, int ranks,
                                              size_t storage_bytes, size_t wire_bytes,
                                              bool inference = false, CommCalls* calls = nullptr,
                                              size_t gathered_bytes = 0);

}  // namespace mlps

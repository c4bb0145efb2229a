// bin/data: data parallelism. DDP (bucketed gradient all-reduce overlapped with backward) and
// ZeRO stages 1-3 over --dp ranks, each training on its rows of the global batch; ZeRO-3 may
// shard within groups of --shard-group ranks and replicate across the groups (hybrid sharding).
#include "src/schemes/data/data_scheme.h"

#include <memory>

#include "src/base/errors.h"
#include "src/comm/comm_volume_report.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/options/cli_validators.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/rank_work.h"
#include "src/schemes/data/data_memory.h"
#include "src/schemes/data/data_parallel_trainer.h"
#include "src/schemes/data/data_volumes.h"
#include "src/schemes/data/fully_sharded_trainer.h"
#include "src/schemes/data/gradient_bucketer.h"

namespace mlps {
namespace {

// The first line of bin/data's --help.
constexpr const char* kDescription =
    "Data parallelism: DDP with bucketed, overlapped gradient all-reduce "
    "(--zero 0) and ZeRO stages 1, 2 and 3 (FSDP).";

std::vector<RankWork> data_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const DataGrid& grid = c.grid_as<DataGrid>();
  const int n = c.world;
  // Hybrid sharding (--shard-group G < N): groups of G consecutive ranks share one sharded copy
  // ("shard"), the N/G copies all-reduce ("data"; bare "allreduce" over all ranks when G = 1).
  const int g = grid.shard_group > 0 ? grid.shard_group : n;
  shape.axes = {{"data", n / g}, {"shard", g}};
  shape.axis_of_group = g == n ? std::map<std::string, std::string>{{"world", "shard"}}
                               : std::map<std::string, std::string>{
                                     {"world", "data"}, {"shard", "shard"}, {"data", "data"}};
  // bf16 and fp16: typed 16-bit storage, as bin/data trains.
  RankWork w = replica_share(o, max_rows(o.batch, n), 1.0, nullptr, true);
  const double params = static_cast<double>(parameter_count(o.model));
  w.gemm_parameters = params;  // ZeRO-3 gathers each unit whole before its GEMMs
  w.weights_gathered = grid.zero == 3;
  w.optimized_parameters = grid.zero >= 1 ? params / g : params;
  // DDP's optimizer zeroes the gradients it updates; a sharded one holds a shard only, so the
  // whole gradient is written with zeros once a step (ZeRO-1's buffer, ZeRO-2's buckets, ZeRO-3's
  // units).
  if (grid.zero >= 1) w.elementwise.backward += params * element_bytes(o.precision);
  // Gradients on their wire (fp32 with --fp32-grad-comm); typed values are all-gathered as
  // their 2 bytes, whatever the gradients' wire.
  w.bytes = data_comm_bytes(o.model, grid, n, element_bytes(o.precision), gradient_wire_bytes(o),
                            false, &w.calls, w.typed_16bit ? 2 : 0);
  const GradientBucketer bucketer =
      ddp_buckets(parameter_tensor_sizes(o.model), grid.bucket_mb, element_bytes(o.precision),
                  grid.zero >= 1 ? n : 1);
  std::vector<double> bucket_shares;
  for (const GradientBucket& b : bucketer.buckets())
    bucket_shares.push_back(static_cast<double>(b.count) /
                            static_cast<double>(bucketer.total_elements()));
  if (grid.zero != 3)
    for (const auto& [key, bytes] : w.bytes) w.call_shares[key] = bucket_shares;
  w.memory = data_memory(o, n, grid);
  w.offloaded_state_bytes = w.memory.disk;
  const ElementSizes sizes = element_sizes(o.precision, true);
  // Offloaded from a GPU: the shard's gradients down, its values up (but offloaded ones).
  if (w.memory.host > 0)
    w.exchanged_bytes =
        w.optimized_parameters * (sizes.kept + (grid.offload_params ? 0 : sizes.stored));
  if (grid.offload_params && grid.offload != OffloadTier::none)
    w.fetched_bytes = 2 * w.optimized_parameters * sizes.stored;
  // Offloaded values on disk are written by the update, not read by it: half their bytes.
  if (grid.offload_params && grid.offload == OffloadTier::disk)
    w.offloaded_state_bytes -= w.optimized_parameters * sizes.stored / 2;
  // Overlapped, DDP's and ZeRO-1/2's buckets hide behind the backward pass (their parameters'
  // all-gather after the update waits), ZeRO-3's units behind the whole step; --no-overlap
  // starts them after the backward pass.
  if (grid.overlap) {
    w.hiding.window = grid.zero == 3 ? CommHiding::Window::step : CommHiding::Window::backward;
    w.hiding.allgathers_exposed = grid.zero != 3;
    w.hiding.cold_buffers = grid.zero == 3;
  }
  return {w};
}

void describe_grid(PlanCandidate& c, const DataGrid& grid) {
  c.set_grid(grid, data_work, c.world);
}

// --zero 0-3 on every world above one rank, ZeRO 1-3 with the optimizer state offloaded to a
// GPU's host memory and to disk, and ZeRO-3 with its parameters too (bin/plan keeps those where
// the machine can price them and nothing fits in memory: src/plan/offload_weighing.h).
void add_grid_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) {
  for (int zero = 0; zero <= 3 && base.world > 1; ++zero)
    for (const OffloadTier tier : {OffloadTier::none, OffloadTier::host, OffloadTier::disk})
      for (const bool params : {false, true}) {
        if (zero == 0 && tier != OffloadTier::none) continue;
        if (params && (zero != 3 || tier == OffloadTier::none)) continue;
        std::vector<std::string> flags = {"--zero", std::to_string(zero)};
        if (tier != OffloadTier::none)
          flags.insert(flags.end(), {"--offload", params ? "optimizer+params" : "optimizer",
                                     "--offload-to",
                                     tier == OffloadTier::host ? "host" : "disk:DIR"});
        add_if_accepted(out, candidate_of(base, "data", flags), [&](PlanCandidate& c) {
          DataGrid grid;
          grid.zero = zero;
          grid.offload = tier;
          grid.offload_params = params;
          if (tier == OffloadTier::host) c.options.device = "cuda";  // the GPU's tier
          check_batch_covers_ranks(c.options.batch, c.world);
          resolve_shard_group(grid, c.world);
          describe_grid(c, grid);
        });
      }
}

class DataScheme final : public Scheme {
 public:
  DataScheme() : Scheme("data", kDescription) {}
  void add_options(CLI::App& app) override {
    app.add_option("--dp", dp_, "data-parallel ranks (default: all ranks; must equal the world "
                   "size)")->check(CLI::Range(1, 1 << 20));
    app.add_option("--zero", config_.zero, "0: DDP; 1: optimizer state sharded; 2: gradients "
                   "sharded too; 3: parameters sharded (FSDP)")->check(CLI::Range(0, 3));
    app.add_option("--bucket-mb", config_.bucket_mb, "gradient bucket size in MiB (the first "
                   "bucket is 1 MiB, as in PyTorch)")->check(positive_real());
    app.add_option("--shard-group", config_.shard_group, "--zero 3 only: shard within groups of "
                   "G consecutive ranks and replicate across the N/G groups (hybrid sharding; "
                   "default: one group of all ranks)")->check(CLI::Range(1, 1 << 20));
    app.add_option("--offload", offload_, "optimizer: keep the optimizer state each rank owns "
                   "(Adam's moments, and the fp32 master) out of the memory the model computes "
                   "in, visited a chunk at a time during the update (ZeRO-Offload; --zero 1-3); "
                   "optimizer+params: the parameter shard too, each unit's brought back before "
                   "its all-gather (ZeRO-Infinity; --zero 3; default: none)")
        ->check(CLI::IsMember({"none", "optimizer", "optimizer+params"}));
    app.add_option("--offload-to", offload_to_, "with --offload: host (a GPU's run, the "
                   "default there: the state in host memory, updated by the CPU, gradients and "
                   "values copied on a stream of their own) or disk:DIR (one scratch file per "
                   "rank in DIR, removed at exit)");
    app.add_flag("--no-overlap", no_overlap_, "start gradient communication only after the "
                 "whole backward pass (for comparison)");
  }
  void check_options(const Options& o) override {
    check_shard_group_stage(config_);
    resolve_offload(config_, offload_, offload_to_, resolve_device(o.device) == DeviceKind::cpu);
  }
  std::string check_grid(const Options& o, int ranks) override {
    config_.overlap = !no_overlap_;
    if (dp_ != 0 && dp_ != ranks)
      throw InputError("--dp " + std::to_string(dp_) + " does not match the " +
                       std::to_string(ranks) + " ranks (data parallelism uses all of them)");
    check_batch_covers_ranks(o.batch, ranks);
    resolve_shard_group(config_, ranks);
    return data_grid_text(ranks, config_);
  }
  void describe(PlanCandidate& c) const override { describe_grid(c, config_); }
  void add_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) const override {
    add_grid_candidates(out, base);
  }
  MemoryNeed memory(const Options& o, int, int ranks) const override {
    return data_memory(o, ranks, config_);
  }
  int train(SchemeStart& s) override {
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) -> std::unique_ptr<DataParallelBase<decltype(zero)>> {
          using T = decltype(zero);
          if (config_.zero == 3)
            return std::make_unique<FullyShardedTrainer<T>>(s.setup(), config_);
          return std::make_unique<DataParallelTrainer<T>>(s.setup(), config_);
        },
        [&](const auto& trainer) {
          // Every rank moves the same bytes: rank 0's table stands for all.
          if (!s.context.is_root()) return;
          CommCalls calls;
          const auto bytes = trainer.analytic_bytes(s.options.inference, &calls);
          print_comm_volumes(stdout, "rank 0", bytes, trainer.measured_volumes(), &calls);
        });
  }

 private:
  int dp_ = 0;
  bool no_overlap_ = false;
  std::string offload_, offload_to_;
  DataGrid config_;
};

}  // namespace

std::unique_ptr<Scheme> make_data_scheme() { return std::make_unique<DataScheme>(); }

}  // namespace mlps

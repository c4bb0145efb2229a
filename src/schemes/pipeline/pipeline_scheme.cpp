// bin/pipeline: pipeline (inter-layer) parallelism, GPipe, 1F1B, interleaved 1F1B, ZB-H1 or
// ZB-V over micro-batches, optionally
// × data parallelism (--pp P × --dp D = ranks, rank = d·P + s).
#include "src/schemes/pipeline/pipeline_scheme.h"

#include <optional>

#include "src/comm/comm_volume_report.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/options/cli_validators.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/rank_work.h"
#include "src/schemes/pipeline/pipeline_memory.h"
#include "src/schemes/pipeline/pipeline_schedule.h"
#include "src/schemes/pipeline/pipeline_trainer.h"
#include "src/schemes/pipeline/pipeline_volumes.h"

namespace mlps {
namespace {

// The first line of bin/pipeline's --help.
constexpr const char* kDescription =
    "Pipeline (inter-layer) parallelism: each of --pp stages holds a "
    "contiguous run of the model's units (embed and the first blocks on stage "
    "0, the last blocks and the classifier on the last stage); micro-batches "
    "flow through them under --schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1, "
    "ZB-V); --dp pipeline "
    "replicas all-reduce their gradients stage by stage. Rank = replica x pp "
    "+ stage.";

std::vector<RankWork> pipeline_work(const PlanCandidate& c, SchemeShape& shape) {
  const Options& o = c.options;
  const PipelineGrid& layout = c.grid_as<PipelineGrid>();
  shape.axes = layout.axes();
  shape.axis_of_group = {{"pipe", "pipe"}, {"data", "data"}};
  const double rows = max_rows(o.batch, layout.replicas);
  const double total = static_cast<double>(parameter_count(o.model));
  const std::vector<std::vector<LinearShape>> units = unit_linears(o.model);
  std::vector<RankWork> ranks;
  for (int s = 0; s < layout.stages; ++s) {
    const double held = static_cast<double>(pipeline_rank_parameters(o.model, layout, s));
    RankWork w = replica_share(o, rows, held / total, nullptr, true);  // typed, as bin/pipeline
    w.gemm_rows = rows / layout.micro_batches;
    w.gemm_linears.clear();
    const PipelineShape ps = layout.shape();
    for (int vs = 0; vs < ps.virtual_stages(); ++vs)
      if (ps.rank_of(vs) == s)
        for (int u = layout.partition.first_unit(vs); u < layout.partition.end_unit(vs); ++u)
          w.gemm_linears.insert(w.gemm_linears.end(), units[u].begin(), units[u].end());
    w.gemm_parameters = held;
    w.optimized_parameters = held;
    w.bytes = pipeline_comm_bytes(o.model, layout, o.batch, layout.rank_of(s, 0),
                                  value_wire_bytes(o), gradient_wire_bytes(o), false, &w.calls);
    w.memory = pipeline_memory(o, layout, s);
    // Only the sends at its stage boundaries wait: two calls each, at a call's mean size; the
    // other transfers overlap the neighbours' compute.
    w.hiding.exposed_calls["sendrecv:pipe"] = 2.0 * (ps.virtual_stages() - 1);
    w.micro_batches = layout.micro_batches;
    w.bubble_fraction = [ps](double forward, double backward, double weight) {
      const double passes = static_cast<double>(ps.micro_batches) * ps.chunks;
      PassTimes t;
      t.forward = forward / passes;
      t.weight = weight / passes;
      t.input = backward / passes - t.weight;
      return ideal_bubble_fraction(ps, t);
    };
    ranks.push_back(w);
  }
  return ranks;
}

void describe_grid(PlanCandidate& c, const PipelineGrid& grid) {
  c.set_grid(grid, pipeline_work, grid.replicas, grid.stages);
}

// Every P > 1 dividing the world, M = P, 2P and 4P, each schedule (interleaved with v = 2).
void add_grid_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) {
  for (int p : divisors_above_one(base.world))
    for (int m : {p, 2 * p, 4 * p})
      for (const std::string& schedule : pipeline_schedule_names()) {
        PipelineOptions po;
        po.pp = p;
        po.micro_batches = m;
        po.schedule = schedule;
        std::vector<std::string> flags = {"--pp", std::to_string(p), "--micro-batches",
                                          std::to_string(m), "--schedule", schedule};
        if (po.schedule == "interleaved") {
          po.virtual_stages = 2;
          flags.insert(flags.end(), {"--virtual-stages", "2"});
        }
        add_if_accepted(out, candidate_of(base, "pipeline", flags), [&](PlanCandidate& c) {
          describe_grid(c, resolve_pipeline_grid(po, c.options.model, c.options.batch, c.world));
        });
      }
}

class PipelineScheme final : public Scheme {
 public:
  PipelineScheme() : Scheme("pipeline", kDescription) {}
  void add_options(CLI::App& app) override {
    app.add_option("--pp", p_.pp, "pipeline stages P (0: the ranks / --dp); P x D must equal the "
                   "ranks, and P may not exceed the blocks (--layers)")
        ->check(integer_between(0, 1 << 20));
    app.add_option("--dp", p_.dp, "pipeline replicas D (0: the ranks / --pp, or 1 when --pp is 0 "
                   "too); replica d trains on rows [d*B/D, (d+1)*B/D) of the global batch B")
        ->check(integer_between(0, 1 << 20));
    app.add_option("--micro-batches", p_.micro_batches, "micro-batches M per replica and step; M "
                   "must divide the replica's rows (--batch / D)")
        ->check(integer_between(1, 1 << 20));
    app.add_option("--schedule", p_.schedule, "gpipe: all forwards, then all backwards (M "
                   "micro-batches of activations per stage); 1f1b: PipeDream-Flush, P-s-1 "
                   "warm-up forwards on stage s, then one forward one backward (at most P-s in "
                   "flight); interleaved: Megatron's interleaved 1F1B over --virtual-stages v "
                   "chunks per rank (rank r holds virtual stages r, r+P, ...; M a multiple of "
                   "P); zb-h1: 1F1B with each backward split into B (input gradient) and W "
                   "(weight gradient), stage s deferring s W's into the cool-down; zb-v: two "
                   "chunks per rank in a V (rank r holds virtual stages r and 2P-1-r), B/W split, "
                   "list-scheduled within 1F1B's peak memory. zb-v with more micro-batches "
                   "than stages needs the MPI backend (NCCL matches transfers in call order)")
        ->check(CLI::IsMember(pipeline_schedule_names()));
    app.add_option("--virtual-stages", p_.virtual_stages, "model chunks per rank under "
                   "--schedule interleaved (v; P x v may not exceed the blocks)")
        ->check(integer_between(1, 1 << 10));
    app.add_option("--partition", p_.partition, "blocks per stage (per virtual stage, in model "
                   "order, under interleaved and zb-v), comma-separated, e.g. 1,2,1 "
                   "for 4 blocks on 3 stages: stage 0 also holds the embedding and the last "
                   "stage the classifier; every stage at least one block, the sum = --layers "
                   "(default: the contiguous split minimising the largest stage's parameter "
                   "count)")
        ->check(non_empty());
  }
  void check_options(const Options&) override { check_pipeline_flags(p_); }
  std::string check_grid(const Options& o, int ranks) override {
    layout_ = resolve_pipeline_grid(p_, o.model, o.batch, ranks);
    return layout_->grid();
  }
  void describe(PlanCandidate& c) const override { describe_grid(c, *layout_); }
  void add_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) const override {
    add_grid_candidates(out, base);
  }
  MemoryNeed memory(const Options& o, int rank, int) const override {
    return pipeline_memory(o, *layout_, layout_->stage_of(rank));
  }
  int train(SchemeStart& s) override {
    const Options& o = s.options;
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) {
          return std::make_unique<PipelineTrainer<decltype(zero)>>(s.setup(), *layout_);
        },
        [&](const auto& trainer) {
          // Ranks move different bytes (a stage's neighbours, its chunks' gradients): rank 0's
          // table is rank 0's. Mixed precision sends 16-bit values, gradients in fp32 with
          // --fp32-grad-comm.
          if (s.context.is_root() && !o.inference) {
            CommCalls calls;
            const auto bytes = pipeline_comm_bytes(
                o.model, *layout_, o.batch, 0, wire_element_bytes(o.precision),
                wire_element_bytes(o.precision, o.fp32_grad_comm), false, &calls);
            print_comm_volumes(stdout, "rank 0", bytes, trainer.measured_volumes(), &calls);
          }
          // With --inference the figures are those of the forward-only stream (evaluate()).
          print_pipeline_report(*layout_,
                                trainer.batch_slice(o.batch).count / layout_->micro_batches,
                                trainer.report(o.warmup, o.inference), MPI_COMM_WORLD, o.inference);
        });
  }

 private:
  PipelineOptions p_;
  std::optional<PipelineGrid> layout_;
};

}  // namespace

std::unique_ptr<Scheme> make_pipeline_scheme() { return std::make_unique<PipelineScheme>(); }

}  // namespace mlps

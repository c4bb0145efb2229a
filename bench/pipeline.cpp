// bin/pipeline: pipeline (inter-layer) parallelism, GPipe, 1F1B, interleaved 1F1B, ZB-H1 or
// ZB-V over micro-batches, optionally
// × data parallelism (--pp P × --dp D = ranks, rank = d·P + s).
#include <optional>

#include "src/cli_validators.h"
#include "src/driver/scheme_main.h"
#include "src/driver/training_driver.h"
#include "src/comm/comm_volume_report.h"
#include "src/memory/scheme_memory.h"
#include "src/schemes/pipeline/pipeline_trainer.h"
#include "src/schemes/pipeline/pipeline_volumes.h"

int main(int argc, char** argv) {
  using namespace mlps;
  PipelineOptions p;
  std::optional<PipelineLayout> layout;
  SchemeDefinition scheme;
  scheme.name = "pipeline";
  scheme.description = "Pipeline (inter-layer) parallelism: each of --pp stages holds a "
                       "contiguous run of the model's units (embed and the first blocks on stage "
                       "0, the last blocks and the classifier on the last stage); micro-batches "
                       "flow through them under --schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1, "
                       "ZB-V); --dp pipeline "
                       "replicas all-reduce their gradients stage by stage. Rank = replica x pp "
                       "+ stage.";
  scheme.add_options = [&](CLI::App& app) {
    app.add_option("--pp", p.pp, "pipeline stages P (0: the ranks / --dp); P x D must equal the "
                   "ranks, and P may not exceed the blocks (--layers)")
        ->check(integer_between(0, 1 << 20));
    app.add_option("--dp", p.dp, "pipeline replicas D (0: the ranks / --pp, or 1 when --pp is 0 "
                   "too); replica d trains on rows [d*B/D, (d+1)*B/D) of the global batch B")
        ->check(integer_between(0, 1 << 20));
    app.add_option("--micro-batches", p.micro_batches, "micro-batches M per replica and step; M "
                   "must divide the replica's rows (--batch / D)")
        ->check(integer_between(1, 1 << 20));
    app.add_option("--schedule", p.schedule, "gpipe: all forwards, then all backwards (M "
                   "micro-batches of activations per stage); 1f1b: PipeDream-Flush, P-s-1 "
                   "warm-up forwards on stage s, then one forward one backward (at most P-s in "
                   "flight); interleaved: Megatron's interleaved 1F1B over --virtual-stages v "
                   "chunks per rank (rank r holds virtual stages r, r+P, ...; M a multiple of "
                   "P); zb-h1: 1F1B with each backward split into B (input gradient) and W "
                   "(weight gradient), stage s deferring s W's into the cool-down; zb-v: two "
                   "chunks per rank in a V (rank r holds virtual stages r and 2P-1-r), B/W split, "
                   "list-scheduled within 1F1B's peak memory. interleaved, zb-h1 and zb-v need "
                   "the MPI backend")
        ->check(CLI::IsMember({"gpipe", "1f1b", "interleaved", "zb-h1", "zb-v"}));
    app.add_option("--virtual-stages", p.virtual_stages, "model chunks per rank under "
                   "--schedule interleaved (v; P x v may not exceed the blocks)")
        ->check(integer_between(1, 1 << 10));
    app.add_option("--partition", p.partition, "blocks per stage (per virtual stage, in model "
                   "order, under interleaved and zb-v), comma-separated, e.g. 1,2,1 "
                   "for 4 blocks on 3 stages: stage 0 also holds the embedding and the last "
                   "stage the classifier; every stage at least one block, the sum = --layers "
                   "(default: the contiguous split minimising the largest stage's parameter "
                   "count)")
        ->check(non_empty());
  };
  scheme.check_options = [&](const Options&) { check_pipeline_flags(p); };
  scheme.check_grid = [&](const Options& o, int ranks) {
    layout = resolve_pipeline_layout(p, o.model, o.batch, ranks);
    return layout->grid();
  };
  scheme.describe = [&](PlanCandidate& c) {
    c.pipeline = layout;
    c.replicas = layout->replicas;
  };
  scheme.memory = [&](const Options& o, int rank, int) {
    return pipeline_memory(o, *layout, layout->stage_of(rank));
  };
  scheme.train = [&](SchemeStart& s) {
    const Options& o = s.options;
    // bf16 and fp16 train in typed 16-bit storage.
    return train_in_precision<true>(
        s,
        [&](auto zero) {
          return std::make_unique<PipelineTrainer<decltype(zero)>>(s.setup(), *layout);
        },
        [&](const auto& trainer) {
          // Ranks move different bytes (a stage's neighbours, its chunks' gradients): rank 0's
          // table is rank 0's. Mixed precision sends 16-bit values, gradients in fp32 with
          // --fp32-grad-comm.
          if (s.context.is_root() && !o.inference) {
            CommCalls calls;
            const auto bytes = pipeline_comm_bytes(
                o.model, *layout, o.batch, 0, wire_element_bytes(o.precision),
                wire_element_bytes(o.precision, o.fp32_grad_comm), false, &calls);
            print_comm_volumes(stdout, "rank 0", bytes, trainer.measured_volumes(), &calls);
          }
          // With --inference the figures are those of the forward-only stream (evaluate()).
          print_pipeline_report(*layout, trainer.batch_slice(o.batch).count / layout->micro_batches,
                                trainer.report(o.warmup, o.inference), MPI_COMM_WORLD,
                                o.inference);
        });
  };
  return scheme_main(argc, argv, scheme);
}

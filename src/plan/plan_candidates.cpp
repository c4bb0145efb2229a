#include "src/plan/plan_candidates.h"

#include <functional>

#include "src/errors.h"

namespace mlps {

namespace {

std::vector<int> divisors_above_one(int n) {
  std::vector<int> d;
  for (int k = 2; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

// Adds `c` when the scheme's own rules accept it (they throw InputError otherwise).
void add_if_accepted(std::vector<PlanCandidate>& out, PlanCandidate c,
                     const std::function<void(PlanCandidate&)>& resolve) {
  try {
    resolve(c);
  } catch (const InputError&) {
    return;
  }
  out.push_back(std::move(c));
}

void add_scheme_candidates(std::vector<PlanCandidate>& out, const PlanCandidate& base) {
  const Options& o = base.options;
  const int world = base.world;
  auto make = [&](const std::string& scheme, std::vector<std::string> flags) {
    PlanCandidate c = base;
    c.scheme = scheme;
    c.flags = std::move(flags);
    return c;
  };
  if (world == 1) add_if_accepted(out, make("serial", {}), [](PlanCandidate&) {});
  for (int zero = 0; zero <= 3 && world > 1; ++zero)
    add_if_accepted(out, make("data", {"--zero", std::to_string(zero)}), [&](PlanCandidate& c) {
      c.data.zero = zero;
      c.replicas = world;
      check_batch_covers_ranks(o.batch, world);
      resolve_shard_group(c.data, world);
    });
  for (int p : divisors_above_one(world))
    for (int m : {p, 2 * p, 4 * p})
      for (const char* schedule : {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-v"}) {
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
        add_if_accepted(out, make("pipeline", flags), [&](PlanCandidate& c) {
          c.pipeline = resolve_pipeline_layout(po, o.model, o.batch, world);
          c.replicas = c.pipeline->replicas;
        });
      }
  for (int t : divisors_above_one(world))
    for (bool sequence_parallel : {false, true}) {
      std::vector<std::string> flags = {"--tp", std::to_string(t)};
      if (sequence_parallel) flags.push_back("--sequence-parallel");
      add_if_accepted(out, make("tensor1d", flags), [&](PlanCandidate& c) {
        c.replicas = world / t;
        check_batch_covers_ranks(o.batch, c.replicas);
        c.tensor1d = make_tensor1d_plan(o.model, t, sequence_parallel);
        if (sequence_parallel) check_sequence_parallel_rows(*c.tensor1d, o.batch, c.replicas);
      });
    }
  for (int q = 2; q * q <= world; ++q)
    if (world % (q * q) == 0)
      add_if_accepted(out, make("tensor2d", {"--tp-dims", std::to_string(q) + "," +
                                                              std::to_string(q)}),
                      [&](PlanCandidate& c) {
                        c.tensor2d = check_grid_fits(
                            o.model, o.batch, resolve_grid_shape({q, q}, 0, world));
                        c.replicas = c.tensor2d.dp;
                      });
  for (int x = 1; x <= world; ++x)
    for (int y = 1; x * y <= world; ++y)
      for (int z = 1; x * y * z <= world; ++z) {
        if (x * y * z == 1 || world % (x * y * z) != 0) continue;
        const std::string dims = dims_text({x, y, z});
        add_if_accepted(out, make("tensor3d", {"--tp-dims", dims}), [&](PlanCandidate& c) {
          c.tensor3d = check_shape_divides(o.model, o.batch,
                                           resolve_shape_3d({x, y, z}, 0, world));
          c.replicas = c.tensor3d.dp;
        });
      }
}

}  // namespace

std::string PlanCandidate::label() const {
  std::string text = scheme;
  for (const std::string& f : flags) text += " " + f;
  if (options.model.checkpoint_activations) text += " --checkpoint-activations";
  text += std::string(" --precision ") + to_string(options.precision);
  if (options.math != GemmCompute::fp32) text += std::string(" --math ") + to_string(options.math);
  if (options.fp32_grad_comm && storage_format(options.precision) != StorageFormat::full)
    text += " --fp32-grad-comm";
  return text;
}

std::string PlanCandidate::command() const {
  // The model and batch the plan was made for, spelled out (the run's defaults may differ).
  const ModelConfig& m = options.model;
  std::string model = " --hidden " + std::to_string(m.hidden) + " --layers " +
                      std::to_string(m.layers) + " --image-size " + std::to_string(m.image_size) +
                      " " + ffn_flag(m);
  if (m.block == BlockKind::plain) model += " --block plain";
  if (options.optimizer.kind == OptimizerKind::sgd) model += " --optimizer sgd";
  if (options.prefetch != PrefetchMode::automatic)
    model += std::string(" --prefetch ") + to_string(options.prefetch);
  return "mpiexec -n " + std::to_string(world) + " bin/" + label() + model + " --batch " +
         std::to_string(options.batch);
}

std::vector<PlanCandidate> enumerate_candidates(const Options& options, int world,
                                                const std::vector<Precision>& precisions) {
  std::vector<PlanCandidate> out;
  for (Precision precision : precisions)
    for (bool checkpoint : {false, true}) {
      PlanCandidate base;
      base.options = options;
      base.options.precision = precision;
      // --math tf32 applies to fp32 GEMMs: the other precisions' runs take no --math.
      if (precision != Precision::fp32) base.options.math = GemmCompute::fp32;
      base.options.model.checkpoint_activations = checkpoint;
      base.world = world;
      add_scheme_candidates(out, base);
    }
  return out;
}

}  // namespace mlps

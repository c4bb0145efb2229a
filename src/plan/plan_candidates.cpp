#include "src/plan/plan_candidates.h"

#include <functional>

#include "src/base/errors.h"

namespace mlps {

std::vector<int> divisors_above_one(int n) {
  std::vector<int> d;
  for (int k = 2; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

void add_if_accepted(std::vector<PlanCandidate>& out, PlanCandidate c,
                     const std::function<void(PlanCandidate&)>& resolve) {
  try {
    resolve(c);
  } catch (const InputError&) {
    return;
  }
  out.push_back(std::move(c));
}

PlanCandidate candidate_of(const PlanCandidate& base, const std::string& scheme,
                           std::vector<std::string> flags) {
  PlanCandidate c = base;
  c.scheme = scheme;
  c.flags = std::move(flags);
  return c;
}

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

}  // namespace mlps

#include "src/schemes/scheme_registry.h"

#include "src/schemes/data/data_scheme.h"
#include "src/schemes/pipeline/pipeline_scheme.h"
#include "src/schemes/serial/serial_scheme.h"
#include "src/schemes/tensor1d/tensor1d_scheme.h"
#include "src/schemes/tensor2d/tensor2d_scheme.h"
#include "src/schemes/tensor3d/tensor3d_scheme.h"

namespace mlps {

std::vector<std::unique_ptr<Scheme>> scheme_registry() {
  std::vector<std::unique_ptr<Scheme>> schemes;
  for (auto make : {make_serial_scheme, make_data_scheme, make_pipeline_scheme,
                    make_tensor1d_scheme, make_tensor2d_scheme, make_tensor3d_scheme})
    schemes.push_back(make());
  return schemes;
}

std::vector<PlanCandidate> enumerate_candidates(const Options& options, int world,
                                                const std::vector<Precision>& precisions) {
  const std::vector<std::unique_ptr<Scheme>> schemes = scheme_registry();
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
      for (const auto& scheme : schemes) scheme->add_candidates(out, base);
    }
  return out;
}

}  // namespace mlps

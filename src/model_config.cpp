#include "src/model_config.h"

namespace mlps {

std::vector<LinearShape> linear_shapes(const ModelConfig& c) {
  std::vector<LinearShape> shapes{{"embed", c.input_features(), c.hidden}};
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string block = "block" + std::to_string(l);
    if (c.block == BlockKind::plain) {
      shapes.push_back({block + ".fc", c.hidden, c.hidden});
    } else {
      shapes.push_back({block + ".fc1", c.hidden, c.ffn_hidden()});
      shapes.push_back({block + ".fc2", c.ffn_hidden(), c.hidden});
    }
  }
  shapes.push_back({"classifier", c.hidden, c.classes});
  return shapes;
}

int64_t parameter_count(const ModelConfig& c) {
  int64_t count = 0;
  for (const auto& s : linear_shapes(c)) count += s.out * s.in + s.out;
  if (c.block == BlockKind::residual_mlp) count += c.layers * 2 * c.hidden;  // LayerNorm γ, β
  return count;
}

double model_flops_per_sample(const ModelConfig& c, bool inference) {
  const double parameters = static_cast<double>(parameter_count(c));
  if (inference) return 2.0 * parameters;
  ModelConfig no_blocks = c;
  no_blocks.layers = 0;
  const double block_parameters = parameters - static_cast<double>(parameter_count(no_blocks));
  return 6.0 * parameters + (c.checkpoint_activations ? 2.0 * block_parameters : 0.0);
}

std::vector<GemmShape> training_step_gemms(const ModelConfig& c, int64_t batch) {
  std::vector<GemmShape> gemms;
  bool first = true;
  for (const auto& s : linear_shapes(c)) {
    gemms.push_back({s.name + ".forward", false, true, batch, s.out, s.in});
    if (!first) gemms.push_back({s.name + ".grad_input", false, false, batch, s.in, s.out});
    gemms.push_back({s.name + ".grad_weight", true, false, s.out, s.in, batch});
    first = false;
  }
  return gemms;
}

}  // namespace mlps

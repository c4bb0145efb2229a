#include "src/model/model_config.h"

#include <algorithm>
#include <cstdio>

#include "kernels/kernel_traffic.h"
#include "src/base/errors.h"

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

std::vector<std::vector<LinearShape>> unit_linears(const ModelConfig& c) {
  const std::vector<LinearShape> all = linear_shapes(c);
  std::vector<std::vector<LinearShape>> units(static_cast<size_t>(unit_count(c)));
  units.front() = {all.front()};
  const size_t per_block = c.block == BlockKind::plain ? 1 : 2;
  for (size_t l = 0; l + 2 < units.size(); ++l)
    units[l + 1].assign(all.begin() + 1 + l * per_block, all.begin() + 1 + (l + 1) * per_block);
  units.back() = {all.back()};
  return units;
}

int64_t parameter_count(const ModelConfig& c) {
  int64_t count = 0;
  for (const auto& s : linear_shapes(c)) count += s.out * s.in + s.out;
  if (c.block == BlockKind::residual_mlp) count += c.layers * 2 * c.hidden;  // LayerNorm γ, β
  return count;
}

std::vector<int64_t> parameter_tensor_sizes(const ModelConfig& c) {
  std::vector<int64_t> sizes;
  for (const LinearShape& s : linear_shapes(c)) {
    const bool first_of_block = s.name.ends_with(".fc1");
    if (first_of_block) sizes.insert(sizes.end(), {c.hidden, c.hidden});  // LayerNorm γ, β
    sizes.insert(sizes.end(), {s.out * s.in, s.out});
  }
  return sizes;
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
    gemms.push_back({s.name + ".grad_weight", true, false, s.out, s.in, batch, 1.0});
    first = false;
  }
  return gemms;
}

StepElementwiseBytes training_step_elementwise_bytes(const ModelConfig& c, int64_t batch,
                                                     double element_bytes) {
  return training_step_elementwise_bytes(c, {batch, full_widths(c)}, element_bytes);
}

StepElementwiseBytes training_step_elementwise_bytes(const ModelConfig& c,
                                                     const ActivationSlice& slice,
                                                     double element_bytes) {
  const ActivationWidths& w = slice.widths;
  const int64_t r = slice.rows, h = w.hidden, blocks = c.layers;
  const bool residual = c.block == BlockKind::residual_mlp;
  const size_t linears = linear_shapes(c).size();
  StepElementwiseBytes e;
  for (size_t i = 0; i < linears; ++i) {
    // embed and fc2 (and plain blocks) end H wide, fc1 F wide, the classifier in the classes.
    const int64_t out = i + 1 == linears ? (w.logit_block > 0 ? w.logit_block : c.classes)
                        : residual && i % 2 == 1 ? w.ffn
                                                 : h;
    e.forward += traffic::bias_add(r, out);
    e.backward += traffic::bias_grad(r, out);
  }
  // The ReLU over the block's inner width.
  const int64_t inner = residual ? w.ffn : h;
  e.forward += blocks * traffic::relu_forward(r * inner);
  e.backward += blocks * traffic::relu_backward(r * inner);
  if (residual) {  // LayerNorm and the residual add (its backward moves as much)
    e.forward += blocks * (traffic::layernorm_forward(r, h) + traffic::residual_add(r * h));
    e.backward += blocks * (traffic::layernorm_backward(r, h) + traffic::residual_add(r * h));
  }
  e.forward += traffic::softmax_xent_forward(r, c.classes);
  e.backward += traffic::softmax_xent_backward(r, c.classes);
  e.forward = e.forward * element_bytes + traffic::label_bytes(r);
  e.backward = e.backward * element_bytes + traffic::label_bytes(r);
  return e;
}

std::string ffn_flag(const ModelConfig& m) {
  return m.ffn_width > 0 ? "--ffn-hidden " + std::to_string(m.ffn_width)
                         : "--ffn-mult " + std::to_string(m.ffn_mult);
}

std::string ffn_option(const ModelConfig& m) {
  return m.ffn_width > 0 ? ffn_flag(m) : ffn_flag(m) + " x --hidden " + std::to_string(m.hidden);
}

// Element counts are int64 products (H·F, batch·S², Σ parameters) and byte counts 8 times
// those; past 2^60 elements they would overflow before the memory check (which names what a
// smaller but still impossible run needs) could say so. Computed in floating point, so the check
// itself cannot overflow.
void check_sizes_countable(const ModelConfig& m, int64_t batch) {
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  const double pixels = d(m.image_size) * d(m.image_size), hidden = d(m.hidden);
  const double ffn = m.ffn_width > 0 ? d(m.ffn_width) : d(m.ffn_mult) * hidden;
  const double widest = std::max({pixels, hidden, ffn});
  const double parameters = (pixels + 1) * hidden + d(m.layers) * (2 * hidden * ffn + 4 * hidden) +
                            (hidden + 1) * d(m.classes);
  constexpr double kLimit = 1152921504606846976.0;  // 2^60
  const double largest = std::max({parameters, d(batch) * widest, pixels * hidden});
  if (!(largest <= kLimit)) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3g", largest);
    throw InputError("--image-size " + std::to_string(m.image_size) + ", --hidden " +
                     std::to_string(m.hidden) + ", " + ffn_flag(m) + ", --layers " +
                     std::to_string(m.layers) + " and --batch " + std::to_string(batch) +
                     " make tensors of about " + count +
                     " elements, more than 2^60: no machine holds them");
  }
}

std::vector<int64_t> unit_parameter_counts(const ModelConfig& c) {
  const int64_t h = c.hidden;
  const int64_t block = c.block == BlockKind::plain
                            ? h * h + h
                            : 2 * h + (h * c.ffn_hidden() + c.ffn_hidden()) + (c.ffn_hidden() * h + h);
  std::vector<int64_t> counts{c.input_features() * h + h};
  counts.insert(counts.end(), static_cast<size_t>(c.layers), block);
  counts.push_back(h * c.classes + c.classes);
  return counts;
}

}  // namespace mlps

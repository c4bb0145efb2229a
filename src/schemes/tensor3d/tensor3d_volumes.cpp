#include "src/schemes/tensor3d/tensor3d_volumes.h"

namespace mlps {

double Volume3d::ring_bytes() const {
  const double n = group_size;
  const double factor = kind.rfind("allreduce", 0) == 0 ? 2 * (n - 1) / n : (n - 1) / n;
  return bytes * factor;
}

namespace {

int group_size(const Tensor3dGrid& shape, ShardAxis a) {
  return a == ShardAxis::inner ? shape.inner : shape.outer;
}

}  // namespace

Local3d tensor3d_local_elements(const ModelConfig& model, const Tensor3dGrid& shape) {
  Local3d local;
  ShardAxis axis = ShardAxis::outer;  // the pixels; each Linear flips the axis
  auto linear = [&](int64_t in, int64_t out) {
    const int gi = group_size(shape, axis), go = group_size(shape, other(axis));
    const int64_t out_local = (out + go - 1) / go;  // the classifier's blocks are padded
    local.weights += static_cast<double>(out_local * (in / gi)) / shape.depth;
    local.vectors += static_cast<double>(out_local);
    axis = other(axis);
  };
  const int64_t h = model.hidden, f = model.ffn_hidden();
  linear(model.input_features(), h);
  for (int64_t l = 0; l < model.layers; ++l) {
    if (model.block == BlockKind::plain) {
      linear(h, h);
      continue;
    }
    local.vectors += 2.0 * static_cast<double>(h / group_size(shape, axis));  // γ, β
    linear(h, f);
    linear(f, h);
  }
  linear(h, model.classes);
  return local;
}

std::vector<Volume3d> tensor3d_layer_volumes(const ModelConfig& model, int64_t global_batch,
                                             const Tensor3dGrid& shape, size_t element_bytes,
                                             bool cache_weights, bool inference) {
  const double e = static_cast<double>(element_bytes);
  const double b = static_cast<double>(global_batch) / (int64_t{shape.dp} * shape.depth);
  const bool train = !inference, recompute = train && model.checkpoint_activations;
  std::vector<Volume3d> out;
  auto add = [&](const std::string& layer, const std::string& kind, int n, double bytes,
                 int calls = 1) {
    if (n > 1) out.push_back({layer, kind, n, bytes, calls});
  };
  auto size_of = [&](ShardAxis a) { return group_size(shape, a); };
  auto name_of = [](ShardAxis a) { return a == ShardAxis::inner ? "inner" : "outer"; };
  ShardAxis axis = ShardAxis::outer;  // the pixels
  // in_block: rerun by the recompute; last: the block's last Linear (its gather is reused).
  auto linear = [&](const std::string& name, int64_t in, int64_t outf, bool has_dx,
                    bool in_block, bool last) {
    const ShardAxis out_axis = other(axis);
    const int gi = size_of(axis), go = size_of(out_axis);
    const int64_t out_local = (outf + go - 1) / go;  // the classifier's blocks are padded
    const double block = static_cast<double>(out_local) * static_cast<double>(in / gi);
    const std::string sum_in = std::string("allreduce:") + name_of(axis);
    const int gathers = train && !cache_weights ? 2 : 1;  // W again for backward
    add(name, "allgather:depth", shape.depth, block * e * gathers, gathers);
    add(name, sum_in, gi, b * out_local * e);
    if (train && has_dx)
      add(name, std::string("allreduce:") + name_of(out_axis), go, b * (in / gi) * e);
    if (train) add(name, "reduce_scatter:depth", shape.depth, block * e);
    if (recompute && in_block) {
      const std::string rerun = name + " (recompute)";
      if (!cache_weights && !last) add(rerun, "allgather:depth", shape.depth, block * e);
      add(rerun, sum_in, gi, b * out_local * e);
    }
    axis = out_axis;
  };
  const int64_t h = model.hidden, f = model.ffn_hidden();
  linear("embed", model.input_features(), h, false, false, false);
  for (int64_t l = 0; l < model.layers; ++l) {
    const std::string name = "block" + std::to_string(l);
    if (model.block == BlockKind::plain) {
      linear(name + ".fc", h, h, true, true, true);
      continue;
    }
    const int g = size_of(axis);
    const std::string group = name_of(axis);
    add(name + ".norm", "allgather:" + group, g, 2 * b * g * e);
    if (train) add(name + ".norm", "allreduce:" + group, g, 2 * b * e);
    if (recompute) add(name + ".norm (recompute)", "allgather:" + group, g, 2 * b * g * e);
    linear(name + ".fc1", h, f, true, true, false);
    linear(name + ".fc2", f, h, true, true, true);
  }
  linear("classifier", h, model.classes, true, false, false);
  add("logits", std::string("allgather:") + name_of(axis), size_of(axis),
      b * static_cast<double>((model.classes + size_of(axis) - 1) / size_of(axis)) *
          size_of(axis) * e);
  if (train) {
    const Local3d local = tensor3d_local_elements(model, shape);
    add("gradients", "allreduce:depth", shape.depth, local.vectors * e);
    add("gradients", "allreduce:data", shape.dp, (local.vectors + local.weights) * e, 2);
  }
  return out;
}

std::map<std::string, double> tensor3d_volumes(const std::vector<Volume3d>& layers,
                                               CommCalls* calls) {
  std::map<std::string, double> total;
  for (const Volume3d& v : layers) add_volume(total, calls, v.kind, v.bytes, v.calls);
  return total;
}

}  // namespace mlps

#include "src/schemes/tensor3d/tensor3d_grid.h"

#include <vector>

#include "src/base/errors.h"
#include "src/grid/process_grid.h"

namespace mlps {
namespace {

std::string n(int64_t v) { return std::to_string(v); }

}  // namespace

std::string Tensor3dGrid::dims() const { return dims_text({outer, inner, depth}); }
std::string Tensor3dGrid::describe() const { return "tp-dims=" + dims() + ",dp=" + n(dp); }

void check_tp_dims_3d(const std::vector<int>& tp_dims) {
  if (!tp_dims.empty() && tp_dims.size() != 3)
    throw InputError("--tp-dims " + dims_text(tp_dims) +
                     ": expected three positive integers x,y,z");
}

Tensor3dGrid resolve_tensor3d_grid(const std::vector<int>& tp_dims, int dp, int world_size) {
  if (dp < 0) throw InputError("--dp " + n(dp) + " must be positive");
  Tensor3dGrid shape;
  if (tp_dims.empty()) {
    if (dp > 0 && world_size % dp != 0)
      throw InputError("--dp " + n(dp) + " does not divide the " + n(world_size) + " ranks");
    shape.outer = dp > 0 ? world_size / dp : world_size;
  } else {
    check_tp_dims_3d(tp_dims);
    shape.outer = tp_dims[0];
    shape.inner = tp_dims[1];
    shape.depth = tp_dims[2];
  }
  const int64_t grid = shape.tensor_ranks();
  if (dp == 0 && world_size % grid != 0)
    throw InputError("--tp-dims " + shape.dims() + ": " + n(world_size) +
                     " ranks are not a multiple of x·y·z = " + n(grid));
  if (dp > 0 && grid * dp != world_size)
    throw InputError("--tp-dims " + shape.dims() + " --dp " + n(dp) + " needs x·y·z·dp = " +
                     n(grid * dp) + " ranks, not " + n(world_size));
  shape.dp = dp > 0 ? dp : static_cast<int>(world_size / grid);
  return shape;
}

ShardAxis classifier_input_axis(const ModelConfig& model) {
  // The embed turns the outer-sharded pixels into inner-sharded activations; a residual MLP
  // block (fc1 then fc2) keeps the layout, a plain block (one Linear) flips it.
  ShardAxis axis = ShardAxis::inner;
  if (model.block == BlockKind::plain && model.layers % 2 == 1) axis = ShardAxis::outer;
  return axis;
}

Tensor3dGrid check_shape_divides(const ModelConfig& model, int64_t global_batch, const Tensor3dGrid& s) {
  const std::string grid = "the " + s.dims() + " grid";
  if (global_batch % (int64_t{s.dp} * s.depth) != 0)
    throw InputError("--batch " + n(global_batch) + " is not divisible by dp·z = " + n(s.dp) +
                     "·" + n(s.depth) + " (" + grid + " shards the batch over data × depth)");
  if (model.input_features() % s.outer != 0)
    throw InputError("--image-size " + n(model.image_size) + ": S² = " +
                     n(model.input_features()) + " is not divisible by x = " + n(s.outer) +
                     " (" + grid + " shards the embed's inputs over outer)");
  for (int g : {s.outer, s.inner})
    if (model.hidden % g != 0 || model.ffn_hidden() % g != 0)
      throw InputError("--hidden " + n(model.hidden) + " (F = " + n(model.ffn_hidden()) + ", " +
                       ffn_option(model) + ") is not divisible by " + n(g) + " (" + grid +
                       " shards H and F over outer x and inner y)");
  const int64_t out_group =
      classifier_input_axis(model) == ShardAxis::outer ? s.inner : s.outer;
  const int64_t padded_classes = (model.classes + out_group - 1) / out_group * out_group;
  // Each Linear's block (out/G_out)·(in/G_in) is cut into z shards.
  struct Lin { std::string name; int64_t in, out; };
  std::vector<Lin> linears{{"embed", model.input_features(), model.hidden},
                           {"classifier", model.hidden, padded_classes}};
  if (model.block == BlockKind::plain) linears.push_back({"block fc", model.hidden, model.hidden});
  else {
    linears.push_back({"block fc1", model.hidden, model.ffn_hidden()});
    linears.push_back({"block fc2", model.ffn_hidden(), model.hidden});
  }
  const int64_t tp = int64_t{s.outer} * s.inner;
  for (const Lin& l : linears)
    if ((l.in * l.out) % (tp * s.depth) != 0 ||
        (l.in * l.out / tp) % s.depth != 0)
      throw InputError(l.name + " weight [" + n(l.out) + " × " + n(l.in) +
                       "]: its block on " + grid + " is not divisible into z = " +
                       n(s.depth) + " depth shards");
  return s;
}

}  // namespace mlps

#include "src/schemes/tensor2d/tensor2d_grid.h"

#include <cmath>

#include "src/base/errors.h"
#include "src/grid/process_grid.h"

namespace mlps {
namespace {

std::string dims(int q) { return dims_text({q, q}); }

}  // namespace

void check_tp_dims_2d(const std::vector<int>& tp_dims) {
  if (tp_dims.empty()) return;
  const std::string given = "--tp-dims " + dims_text(tp_dims);
  if (tp_dims.size() != 2) throw InputError(given + ": expected two positive integers q,q");
  if (tp_dims[0] != tp_dims[1])
    throw InputError(given + ": tp-dims must be square (q,q), as the 2D grid is");
}

Tensor2dGrid resolve_tensor2d_grid(const std::vector<int>& tp_dims, int dp, int world_size) {
  Tensor2dGrid shape;
  if (dp < 0) throw InputError("--dp " + std::to_string(dp) + " must be positive");
  if (tp_dims.empty()) {
    const int per_replica = dp > 0 ? world_size / dp : world_size;
    const int q = static_cast<int>(std::lround(std::sqrt(static_cast<double>(per_replica))));
    if ((dp > 0 && world_size % dp != 0) || q * q != per_replica)
      throw InputError("--tp-dims not given and " + std::to_string(per_replica) +
                       " ranks per replica are not a square q·q (pass --tp-dims q,q)");
    shape.q = q;
  } else {
    check_tp_dims_2d(tp_dims);
    shape.q = tp_dims[0];
  }
  const int64_t grid = int64_t{shape.q} * shape.q;
  if (dp == 0 && world_size % grid != 0)
    throw InputError("--tp-dims " + dims(shape.q) + ": " + std::to_string(world_size) +
                     " ranks are not a multiple of the " + std::to_string(grid) +
                     " ranks of a q × q grid");
  if (dp > 0 && grid * dp != world_size)
    throw InputError("--tp-dims " + dims(shape.q) + " --dp " + std::to_string(dp) + " needs " +
                     std::to_string(grid * dp) + " ranks (q·q·dp), not " +
                     std::to_string(world_size));
  shape.dp = dp > 0 ? dp : static_cast<int>(world_size / grid);
  return shape;
}

Tensor2dGrid check_grid_fits(const ModelConfig& model, int64_t global_batch, const Tensor2dGrid& shape) {
  const int64_t q = shape.q;
  const std::string grid = "the " + dims(shape.q) + " grid";
  const std::string q_is = "q = " + std::to_string(q);
  if (global_batch < q * shape.dp)
    throw InputError("--batch " + std::to_string(global_batch) + " leaves some of the dp·q = " +
                     std::to_string(shape.dp) + "·" + std::to_string(q) + " = " +
                     std::to_string(q * shape.dp) + " row groups without samples (" + grid +
                     " splits each replica's rows over its q rows)");
  if (model.input_features() < q)
    throw InputError("--image-size " + std::to_string(model.image_size) + ": S² = " +
                     std::to_string(model.input_features()) + " input features are fewer than " +
                     q_is + " (" + grid + " splits them over its rows and columns)");
  if (model.hidden < q)
    throw InputError("--hidden " + std::to_string(model.hidden) + " is smaller than " + q_is +
                     " (" + grid + " splits H over its rows and columns)");
  if (model.classes < q)
    throw InputError("--tp-dims " + dims(shape.q) + ": the classifier's " +
                     std::to_string(model.classes) + " outputs are fewer than the " + q_is +
                     " grid columns that split them");
  if (model.block == BlockKind::residual_mlp && model.ffn_hidden() < q)
    throw InputError(ffn_option(model) + ": the FFN width " + std::to_string(model.ffn_hidden()) +
                     " is smaller than " + q_is + " (" + grid + " splits F over its rows and "
                     "columns)");
  return shape;
}

std::string describe(const Tensor2dGrid& shape) {
  return "tp-dims=" + dims(shape.q) + ",dp=" + std::to_string(shape.dp);
}

}  // namespace mlps

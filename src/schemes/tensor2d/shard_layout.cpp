#include "src/schemes/tensor2d/shard_layout.h"

#include <algorithm>
#include <stdexcept>

#include "src/model/serial_net.h"
#include "src/base/balanced_split.h"

namespace mlps {

ShardLayout::ShardLayout(const ModelConfig& model, int q, int grid_row, int grid_col)
    : ShardLayout(model, [=](TensorShard& t) {
        // Block (i, j) of Wᵀ: W's input columns split over grid rows, its outputs over columns;
        // a vector's part j.
        const int col_part = t.matrix ? grid_row : grid_col;
        t.col0 = part_first(t.global_cols, q, col_part);
        t.cols = part_size(t.global_cols, q, col_part);
        if (!t.matrix) return;
        t.row0 = part_first(t.global_rows, q, grid_col);
        t.rows = part_size(t.global_rows, q, grid_col);
      }) {}

ShardLayout::ShardLayout(const ModelConfig& model, const std::function<void(TensorShard&)>& cut) {
  // A shape-only model for names, ids and shapes: external storage allocates no parameters,
  // and its few activation bytes go to a throwaway device, not this rank's peak memory.
  Device shapes_only(DeviceKind::cpu);
  SerialNet<double> net(shapes_only, model, 1, ParameterStorage::external);
  for (int u = 0; u < net.unit_count(); ++u) {
    UnitRange unit;
    unit.offset = total_;
    std::vector<TensorShard> matrices, vectors;
    for (const Parameter<double>* p : net.unit_parameters(u)) {
      TensorShard t;
      t.name = p->name;
      t.tensor_id = p->tensor_id;
      t.init = p->init;
      t.fan_in = p->fan_in;
      t.global_rows = t.rows = p->rows;
      t.global_cols = t.cols = p->cols;
      t.matrix = p->name.ends_with(".weight") && !p->name.ends_with(".norm.weight");
      if (!t.matrix && p->rows != 1)
        throw std::logic_error("ShardLayout: " + p->name + " is not a vector");
      cut(t);
      (t.matrix ? matrices : vectors).push_back(t);
    }
    for (auto& t : matrices) {
      t.offset = total_;
      total_ += t.size();
    }
    unit.vector_offset = total_;
    for (auto& t : vectors) {
      t.offset = total_;
      total_ += t.size();
    }
    unit.vector_count = total_ - unit.vector_offset;
    unit.count = total_ - unit.offset;
    units_.push_back(unit);
    for (auto* group : {&matrices, &vectors})
      tensors_.insert(tensors_.end(), group->begin(), group->end());
  }
  std::sort(tensors_.begin(), tensors_.end(),
            [](const TensorShard& a, const TensorShard& b) { return a.tensor_id < b.tensor_id; });
}

const TensorShard& ShardLayout::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  throw std::logic_error("ShardLayout: no tensor named " + name);
}

int64_t ShardLayout::matrix_elements() const {
  int64_t n = 0;
  for (const auto& t : tensors_)
    if (t.matrix) n += t.size();
  return n;
}

template <typename T>
std::vector<T> ShardLayout::initial_values(uint64_t seed) const {
  std::vector<T> host(static_cast<size_t>(total_), T(0));
  for (const auto& t : tensors_)
    fill_initial_shard(host.data() + t.offset, t.cols, seed, t.tensor_id, t.init, t.fan_in,
                       t.row0, t.rows, t.col0, t.cols);
  return host;
}

template std::vector<float> ShardLayout::initial_values<float>(uint64_t) const;
template std::vector<double> ShardLayout::initial_values<double>(uint64_t) const;

}  // namespace mlps

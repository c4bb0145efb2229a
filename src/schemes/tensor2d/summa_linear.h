#pragma once
// Linear(in → out) as a SUMMA product on the q × q grid (docs/tensor2d.md), with
// the blocks of balanced_split.h: k_l = part_size(in, q, l), n_j = part_size(out, q, j). Rank
// (i, j) holds X_ij [rows × k_j], W(i, j) = W[out part j, in part i] stored [n_j × k_i] as
// PyTorch stores W, and the bias part b_j. Forward broadcasts X_il along the row and W(l, j)
// along the column at step l; dX and dW each end in one reduce-scatter (over "row", "col") whose
// partials are padded to the largest block: an owner with a smaller block receives into a
// landing buffer and keeps the first rows·k_l (n_j·k_l) elements, its block, contiguous.
// Broadcasts are double-buffered; the dW reduce-scatter overlaps whatever runs next
// (SummaWorkspace::finish_weight_gradient waits for it). A 1 × 1 grid communicates nothing.
// Typed 16-bit storage (T = bf16, fp16) broadcasts 16-bit blocks and reduces 16-bit dX partials;
// dW's partials and gradients are fp32.
#include <vector>

#include "src/device/buffer.h"
#include "src/model/layers.h"
#include "src/comm/communicator.h"
#include "src/schemes/tensor2d/shard_layout.h"

namespace mlps {

// Buffers every SummaLinear of a model shares, sized for its largest Linear: broadcast targets
// (two of each, for double buffering), the partial products the reduce-scatters read (q padded
// blocks each: the price of reduce-scatters instead of per-step reductions) and, when some
// split is uneven, the landing buffers of the padded reduce-scatters.
template <typename T>
struct SummaWorkspace {
  // q = 1 allocates nothing (nothing is broadcast or reduced).
  SummaWorkspace(Device& device, const ModelConfig& model, int q, int64_t max_rows);
  Device* device = nullptr;
  Buffer<T> activation_blocks[2];  // [rows × k_l]
  Buffer<T> weight_blocks[2];      // [n_j × k_l]
  Buffer<T> grad_input_partials;        // q × [rows × k_0]
  Buffer<Acc<T>> grad_weight_partials;  // q × [n_j × k_0]
  Buffer<T> grad_input_landing;         // [rows × k_0], uneven splits only
  Buffer<Acc<T>> grad_weight_landing;   // [n_j × k_0], uneven splits only
  // The dW reduce-scatter in flight (it reads grad_weight_partials) and, when it lands in
  // grad_weight_landing, where its first weight_count elements go once it is done.
  PendingComm pending_weight_gradient;
  Acc<T>* weight_destination = nullptr;
  int64_t weight_count = 0;
  // Waits for the dW reduce-scatter in flight, if any, and copies a landed block out.
  void finish_weight_gradient();
};

template <typename T>
class SummaLinear : public Linear<T> {
 public:
  // row: the grid row's ranks, ranked by column j; col: the grid column's, ranked by row i.
  SummaLinear(Device& device, Communicator& row, Communicator& col, SummaWorkspace<T>& workspace,
              int64_t in, int64_t out);
  // Points the layer at its shards <name>.weight [n_j × k_i], <name>.bias [n_j] and their
  // gradients in the flat buffers laid out by `layout`.
  void bind(const ShardLayout& layout, const std::string& name, T* values, Acc<T>* grads);

  int64_t in_width() const override { return in_parts_[row_.rank()]; }  // k_j: its X block
  int64_t out_width() const override { return n_; }                        // n_j: its Y block

  // y [rows × n_j] = (X·Wᵀ + b)_ij from x [rows × k_j].
  void forward(const T* x, T* y, int64_t rows, bool backward_next = false) override;
  // The bias gradient (this rank's rows only: the caller sums it down the grid column), the
  // weight gradient (reduce-scattered into weight_grad, pending in the workspace) and, unless
  // dx is null, dx [rows × k_j]. Gradients are overwritten (one pass per step).
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate = false) override;

 private:
  Device& device_;
  Communicator& row_;
  Communicator& col_;
  SummaWorkspace<T>& workspace_;
  std::vector<int64_t> in_parts_;  // k_l for l < q
  int64_t k_max_, n_;              // k_0 (the padded partial block's width), n_j
  T* weight_ = nullptr;
  Acc<T>* weight_grad_ = nullptr;
  T* bias_ = nullptr;
  Acc<T>* bias_grad_ = nullptr;
};

}  // namespace mlps

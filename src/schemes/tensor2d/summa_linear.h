#pragma once
// Linear(in → out) as a SUMMA product on the q × q grid. Rank (i, j) holds the activation block
// X_ij [rows × in/q] (its grid row's samples, feature block j), the weight block
// W[j·n .. (j+1)·n, i·k .. (i+1)·k] stored [n × k] as PyTorch stores W (so it is block (i, j) of
// Wᵀ [in × out]), k = in/q, n = ⌈out/q⌉, rows of W past `out` zero (padding, when q does not
// divide out), and the bias slice b[j·n ..] (replicated down the grid column).
//   forward  Y_ij = Σ_l X_il·(Wᵀ)_lj: step l broadcasts X_il along grid row i ("row", root l)
//            and W block (l, j) along grid column j ("col", root l);
//   dX       dX_il = Σ_j dY_ij·W(l, j): step l broadcasts W block (l, j) along the column, the
//            rank computes its partial for block column l, and one reduce-scatter over "row"
//            sums the q partials of each block column onto its owner (i, l);
//   dW       dW(l, j) = Σ_i dY_ijᵀ·X_il: step l broadcasts X_il along the row, and one
//            reduce-scatter over "col" sums each partial onto its owner (l, j).
// The broadcasts are double-buffered: block l+1 is in flight while block l's GEMM runs. The dX
// reduce-scatter overlaps the dW steps; the dW reduce-scatter overlaps whatever runs next
// (SummaWorkspace::finish_weight_gradient waits for it). A 1 × 1 grid communicates nothing: its
// GEMMs read and write the layer's own buffers.
#include "src/buffer.h"
#include "src/schemes/tensor2d/grid_2d.h"
#include "src/schemes/tensor2d/shard_layout.h"

namespace mlps {

// Buffers every SummaLinear of a model shares, sized for its largest Linear: broadcast targets
// (two of each, for double buffering) and the partial products the reduce-scatters read
// (q blocks each: the price of reduce-scatters instead of per-step reductions).
template <typename T>
struct SummaWorkspace {
  // q = 1 allocates nothing (nothing is broadcast or reduced).
  SummaWorkspace(Device& device, const ModelConfig& model, int q, int64_t max_rows);
  Buffer<T> activation_blocks[2];  // [rows × k]
  Buffer<T> weight_blocks[2];      // [n × k]
  Buffer<T> grad_input_partials;   // q × [rows × k]
  Buffer<T> grad_weight_partials;  // q × [n × k]
  PendingComm pending_weight_gradient;  // reads grad_weight_partials until done
  void finish_weight_gradient();
};

template <typename T>
class SummaLinear {
 public:
  SummaLinear(Device& device, Grid2d& grid, SummaWorkspace<T>& workspace, int64_t in,
              int64_t out);
  // Points the layer at its shards <name>.weight [n × k], <name>.bias [n] and their gradients
  // in the flat buffers laid out by `layout`.
  void bind(const ShardLayout& layout, const std::string& name, T* values, T* grads);

  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  int64_t local_in() const { return k_; }
  int64_t local_out() const { return n_; }

  // y [rows × n] = (X·Wᵀ + b)_ij from x [rows × k].
  void forward(const T* x, T* y, int64_t rows);
  // The bias gradient (this rank's rows only: the caller sums it down the grid column), the
  // weight gradient (reduce-scattered into weight_grad, pending in the workspace) and, unless
  // dx is null, dx [rows × k].
  void backward(const T* x, const T* dy, T* dx, int64_t rows);

 private:
  Device& device_;
  Grid2d& grid_;
  SummaWorkspace<T>& workspace_;
  int64_t in_, out_, k_, n_;
  T* weight_ = nullptr;
  T* weight_grad_ = nullptr;
  T* bias_ = nullptr;
  T* bias_grad_ = nullptr;
};

}  // namespace mlps

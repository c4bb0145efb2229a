#pragma once
// One Linear(in → out) of FC_Net on the AxoNN 3D grid. Its input features are sharded over
// group `in` (size g_in, this rank's index i), its outputs over group `out` (g_out, index o):
// "normal" layers have in = inner, out = outer; "transposed" ones the other way round, so one
// layer's output layout is the next one's input layout. The rank's block of W[out × in] is
// rows o·out/g_out.. × cols i·in/g_in..; flattened row-major and cut into G_d contiguous
// shards, of which the rank stores shard d (the bias slice of its out/g_out outputs is
// replicated over in, depth and data).
//   forward:  all-gather W over depth; y = x·Wᵀ on [rows × in/g_in]; all-reduce y over `in`;
//             add the bias. In activation checkpointing's recompute, the block's last Linear
//             runs its backward right after its forward: that forward keeps the gathered W
//             for it and prefetches nothing (the next layer's backward is already done).
//   backward: all-gather W over depth again unless cached; dx = dy·W all-reduced over `out`
//             (optionally overlapping the dW GEMM); dW = dyᵀ·x reduce-scattered over depth
//             (optionally left pending until the caller finishes it); db = Σ_rows dy.
// With G_d > 1 the full block and its dW live in scratch shared with the other layers
// (DepthScratch, handed over by use_scratch before the first step).
// When g_out does not divide out (the classifier's 10 classes), the blocks are padded to
// ⌈out/g_out⌉ rows: padded rows and bias entries are zero and get zero gradients.
// A group of one rank is never called.
#include <cstdint>
#include <vector>

#include "src/buffer.h"
#include "src/comm/communicator.h"
#include "src/model/layers.h"

namespace mlps {

struct Overlap3d {
  bool cache_weights = false;     // keep the gathered W from forward for backward
  bool overlap_dx = false;        // dX all-reduce in flight during the dW GEMM
  bool defer_dw_reduce = false;   // dW reduce-scatter finished by the caller, later
  bool prefetch_weights = false;  // gather the next layer's W during this layer's compute
};

template <typename T>
class Linear3d : public Linear<T> {
 public:
  Linear3d(Device& device, Communicator& in, Communicator& out, Communicator& depth,
           int64_t in_features, int64_t out_features, const Overlap3d& overlap);

  int64_t in_width() const override { return in_local_; }
  int64_t out_width() const override { return out_local_; }
  int64_t shard_elements() const { return shard_; }
  int64_t block_elements() const { return block_; }  // out_local·in_local
  int64_t row0() const { return row0_; }  // the block's first global row (output)
  int64_t col0() const { return col0_; }  // the block's first global column (input)
  Communicator& in_group() const { return in_; }
  // Where its weight shard, bias slice and their gradients live.
  void bind(T* weight, T* dweight, T* bias, T* dbias);
  // Where the gathered block and the full dW land (block_elements() each; G_d > 1 only).
  void use_scratch(T* gathered_weight, T* weight_grad_block);
  // Layers to prefetch: next in forward order, previous in backward order (null: none).
  void set_neighbours(Linear3d* next, Linear3d* previous);

  // Weights changed (a new step): the gathered copy is stale.
  void invalidate() { gathered_ = false; }
  // backward_next: this layer's backward follows at once (see above).
  void forward(const T* x, T* y, int64_t rows, bool backward_next = false) override;
  // dx may be null (the embed: no input gradient). Gradients are overwritten. Ends by finishing
  // the next layer's deferred dW reduce-scatter, which ran during this backward.
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate = false) override;
  // Waits for a deferred dW reduce-scatter (no-op when none is pending).
  void finish_weight_gradient();

 private:
  void start_gather();
  const T* gathered_weight();

  Device& device_;
  Communicator& in_;
  Communicator& out_;
  Communicator& depth_;
  Overlap3d overlap_;
  int64_t in_local_, out_local_, block_, shard_, row0_, col0_;
  T* weight_ = nullptr;
  T* dweight_ = nullptr;
  T* bias_ = nullptr;
  T* dbias_ = nullptr;
  T* full_weight_ = nullptr;   // [out_local × in_local] scratch (G_d > 1 only)
  T* full_dweight_ = nullptr;
  PendingComm gather_, reduce_;
  bool gathered_ = false;
  Linear3d* next_ = nullptr;
  Linear3d* previous_ = nullptr;
};

}  // namespace mlps

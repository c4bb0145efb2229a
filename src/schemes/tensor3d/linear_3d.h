#pragma once
// One Linear(in → out) of FC_Net on the AxoNN 3D grid (docs/tensor3d.md).
// Its inputs are sharded over group `in` (g_in ranks, this rank's index i), its outputs over
// `out` (g_out, index o): normal layers in = inner, out = outer, transposed ones swapped. The
// rank's block of W[out × in] (rows o·out/g_out.., cols i·in/g_in..) is flattened row-major and
// cut into G_d shards, of which it stores shard d; its bias slice is replicated over in, depth
// and data. When g_out does not divide out (the classifier), blocks are padded to ⌈out/g_out⌉
// rows: padded rows and bias entries are zero and get zero gradients.
// In checkpointing's recompute a block's last Linear runs its backward right after its
// forward: that forward keeps the gathered W for it and prefetches nothing (the next layer's
// backward is already done). A group of one rank is never called. Typed 16-bit storage (T =
// bf16, fp16): 16-bit weights gathered and activations summed as they are, fp32 dW blocks and
// gradients.
#include <cstdint>
#include <vector>

#include "src/device/buffer.h"
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
  // Where its weight shard, bias slice and their gradients live.
  void bind(T* weight, Acc<T>* dweight, T* bias, Acc<T>* dbias) {
    weight_ = weight;
    dweight_ = dweight;
    bias_ = bias;
    dbias_ = dbias;
  }
  // Where the gathered block and the full dW land (block_elements() each; G_d > 1 only).
  void use_scratch(T* gathered_weight, Acc<T>* weight_grad_block) {
    full_weight_ = gathered_weight;
    full_dweight_ = weight_grad_block;
  }
  // Layers to prefetch: next in forward order, previous in backward order (null: none).
  void set_neighbours(Linear3d* next, Linear3d* previous) {
    next_ = next;
    previous_ = previous;
  }

  // Weights changed (a new step): the gathered copy is stale.
  void invalidate() { gathered_ = false; }
  // backward_next: this layer's backward follows at once (see above).
  void forward(const T* x, T* y, int64_t rows, bool backward_next = false) override;
  // dx may be null (the embed: no input gradient). Gradients are overwritten. Ends by finishing
  // the next layer's deferred dW reduce-scatter, which ran during this backward.
  void backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate = false) override;
  // Waits for a deferred dW reduce-scatter (no-op when none is pending).
  void finish_weight_gradient() { complete(reduce_); }

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
  Acc<T>* dweight_ = nullptr;
  T* bias_ = nullptr;
  Acc<T>* dbias_ = nullptr;
  T* full_weight_ = nullptr;   // [out_local × in_local] scratch (G_d > 1 only)
  Acc<T>* full_dweight_ = nullptr;
  PendingComm gather_, reduce_;
  bool gathered_ = false;
  Linear3d* next_ = nullptr;
  Linear3d* previous_ = nullptr;
};

}  // namespace mlps

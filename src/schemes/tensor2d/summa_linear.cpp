#include "src/schemes/tensor2d/summa_linear.h"

#include <algorithm>
#include <array>

#include "src/base/balanced_split.h"

namespace mlps {
namespace {

// One operand of a SUMMA loop: at step l, the rank of `comm` with rank l broadcasts its own
// block of per_part · parts[l] elements; the others receive it into slots[l % 2].
template <typename T>
struct BlockStream {
  Communicator* comm;
  const T* own;
  Buffer<T>* slots;  // two, each large enough for the largest block
  int64_t per_part;  // rows (activations) or n_j (weights) ...
  const std::vector<int64_t>* parts;  // ... times k_l, the block's width at step l
  int64_t count(int l) const { return per_part * (*parts)[static_cast<size_t>(l)]; }
  const T* block(int l) const { return comm->rank() == l ? own : slots[l % 2].data(); }
};

// Runs the q steps of a SUMMA loop: compute(l, blocks) once block l of every stream has
// arrived, with block l+1's broadcasts already in flight. A slot is refilled only after the
// step that read it, so two slots suffice. On a 1 × 1 grid every block is the rank's own.
template <typename T, size_t N, typename Compute>
void summa_steps(int q, const std::array<BlockStream<T>, N>& streams, Compute compute) {
  if (q == 1) {
    std::array<const T*, N> blocks;
    for (size_t s = 0; s < N; ++s) blocks[s] = streams[s].own;
    compute(0, blocks);
    return;
  }
  std::array<std::array<PendingComm, 2>, N> pending;
  auto start = [&](int l) {
    for (size_t s = 0; s < N; ++s)
      pending[s][l % 2] = streams[s].comm->broadcast_async(const_cast<T*>(streams[s].block(l)),
                                                           streams[s].count(l),
                                                           data_type_of<T>(), l);
  };
  start(0);
  for (int l = 0; l < q; ++l) {
    if (l + 1 < q) start(l + 1);
    std::array<const T*, N> blocks;
    for (size_t s = 0; s < N; ++s) {
      complete(pending[s][l % 2]);
      blocks[s] = streams[s].block(l);
    }
    compute(l, blocks);
    for (const auto& stream : streams) stream.comm->progress();
  }
}

}  // namespace

template <typename T>
SummaWorkspace<T>::SummaWorkspace(Device& on, const ModelConfig& model, int q,
                                  int64_t max_rows)
    : device(&on) {
  int64_t max_activation_block = 0, max_weight_block = 0;
  bool uneven = false;
  for (const LinearShape& s : linear_shapes(model)) {
    const int64_t k = largest_part(s.in, q);
    max_activation_block = std::max(max_activation_block, max_rows * k);
    max_weight_block = std::max(max_weight_block, largest_part(s.out, q) * k);
    uneven = uneven || s.in % q != 0;
  }
  if (q == 1) return;  // a 1 × 1 grid computes in place: no broadcasts, no partial products
  for (int s = 0; s < 2; ++s) {
    activation_blocks[s] = Buffer<T>(on, max_activation_block);
    weight_blocks[s] = Buffer<T>(on, max_weight_block);
  }
  grad_input_partials = Buffer<T>(on, q * max_activation_block);
  grad_weight_partials = Buffer<Acc<T>>(on, q * max_weight_block);
  // The padding past a smaller block is summed too: keep it finite (it is never read).
  grad_input_partials.zero();
  grad_weight_partials.zero();
  if (!uneven) return;
  grad_input_landing = Buffer<T>(on, max_activation_block);
  grad_weight_landing = Buffer<Acc<T>>(on, max_weight_block);
}

template <typename T>
void SummaWorkspace<T>::finish_weight_gradient() {
  if (!pending_weight_gradient) return;
  complete(pending_weight_gradient);
  if (weight_destination)
    device->copy(weight_destination, grad_weight_landing.data(), sizeof(Acc<T>) * weight_count);
  weight_destination = nullptr;
}

template <typename T>
SummaLinear<T>::SummaLinear(Device& device, Communicator& row, Communicator& col,
                            SummaWorkspace<T>& workspace, int64_t in, int64_t out)
    : device_(device), row_(row), col_(col), workspace_(workspace),
      k_max_(largest_part(in, row.size())), n_(part_size(out, row.size(), row.rank())) {
  for (int l = 0; l < row.size(); ++l) in_parts_.push_back(part_size(in, row.size(), l));
}

template <typename T>
void SummaLinear<T>::bind(const ShardLayout& layout, const std::string& name, T* values,
                          Acc<T>* grads) {
  const int64_t weight = layout.find(name + ".weight").offset;
  const int64_t bias = layout.find(name + ".bias").offset;
  weight_ = values + weight;
  weight_grad_ = grads + weight;
  bias_ = values + bias;
  bias_grad_ = grads + bias;
}

template <typename T>
void SummaLinear<T>::forward(const T* x, T* y, int64_t rows, bool /*backward_next*/) {
  const std::array<BlockStream<T>, 2> streams{
      BlockStream<T>{&row_, x, workspace_.activation_blocks, rows, &in_parts_},
      BlockStream<T>{&col_, weight_, workspace_.weight_blocks, n_, &in_parts_}};
  summa_steps<T>(row_.size(), streams, [&](int l, const std::array<const T*, 2>& blocks) {
    const int64_t k = in_parts_[static_cast<size_t>(l)];
    device_.gemm<T>(false, true, rows, n_, k, Acc<T>(1), blocks[0], k, blocks[1], k,
                    l == 0 ? Acc<T>(0) : Acc<T>(1), y, n_);
  });
  device_.bias_add<T>(y, bias_, rows, n_);
}

template <typename T>
void SummaLinear<T>::backward(const T* x, const T* dy, T* dx, int64_t rows,
                              bool /*accumulate*/) {
  const bool alone = row_.size() == 1;  // the partial products are already the gradients
  device_.bias_grad<T>(bias_grad_, dy, rows, n_, false);
  PendingComm grad_input;
  // Padded reduce-scatters land in place when this rank's block is the largest, else in the
  // landing buffer (copied out once done).
  const bool input_padded = in_width() < k_max_;
  const bool weight_padded = in_parts_[static_cast<size_t>(col_.rank())] < k_max_;
  if (dx) {
    T* partials = alone ? dx : workspace_.grad_input_partials.data();
    const std::array<BlockStream<T>, 1> weights{
        BlockStream<T>{&col_, weight_, workspace_.weight_blocks, n_, &in_parts_}};
    summa_steps<T>(row_.size(), weights, [&](int l, const std::array<const T*, 1>& blocks) {
      const int64_t k = in_parts_[static_cast<size_t>(l)];
      device_.gemm<T>(false, false, rows, k, n_, Acc<T>(1), dy, n_, blocks[0], k, Acc<T>(0),
                      partials + l * rows * k_max_, k);
    });
    if (!alone)
      grad_input = row_.reduce_scatter_async(
          partials, input_padded ? workspace_.grad_input_landing.data() : dx, rows * k_max_,
          data_type_of<T>());
  }
  workspace_.finish_weight_gradient();  // the partials buffer is about to be rewritten
  Acc<T>* partials = alone ? weight_grad_ : workspace_.grad_weight_partials.data();
  const std::array<BlockStream<T>, 1> inputs{
      BlockStream<T>{&row_, x, workspace_.activation_blocks, rows, &in_parts_}};
  summa_steps<T>(row_.size(), inputs, [&](int l, const std::array<const T*, 1>& blocks) {
    const int64_t k = in_parts_[static_cast<size_t>(l)];
    device_.gemm_gradient<T>(true, false, n_, k, rows, Acc<T>(1), dy, n_, blocks[0], k,
                             Acc<T>(0), partials + l * n_ * k_max_, k);
  });
  if (!alone) {
    workspace_.pending_weight_gradient = col_.reduce_scatter_async(
        partials, weight_padded ? workspace_.grad_weight_landing.data() : weight_grad_,
        n_ * k_max_, data_type_of<Acc<T>>());
    workspace_.weight_destination = weight_padded ? weight_grad_ : nullptr;
    workspace_.weight_count = n_ * in_parts_[static_cast<size_t>(col_.rank())];
  }
  if (grad_input) {
    grad_input->wait();
    if (input_padded)
      device_.copy(dx, workspace_.grad_input_landing.data(), sizeof(T) * rows * in_width());
  }
}

template class SummaLinear<float>;
template class SummaLinear<double>;
template class SummaLinear<bf16>;
template class SummaLinear<fp16>;
template struct SummaWorkspace<float>;
template struct SummaWorkspace<double>;
template struct SummaWorkspace<bf16>;
template struct SummaWorkspace<fp16>;

}  // namespace mlps

#include "src/schemes/data_parallel_base.h"

#include "src/errors.h"

namespace mlps {

namespace {

int64_t checked_rows_per_rank(int64_t global_batch, MPI_Comm comm) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  check_batch_covers_ranks(global_batch, ranks);
  return (global_batch + ranks - 1) / ranks;
}

}  // namespace

void check_batch_covers_ranks(int64_t global_batch, int ranks) {
  if (global_batch < ranks)
    throw InputError("--batch " + std::to_string(global_batch) + " leaves some of the " +
                     std::to_string(ranks) + " data-parallel ranks without samples");
}

template <typename T>
DataParallelBase<T>::DataParallelBase(const TrainerSetup& s, const DataParallelConfig& config)
    : ForwardBackwardTrainer<T>(s), config_(config), metrics_comm_(s.world),
      comm_(make_communicator(s.backend, device_, s.world, "world", this->log_,
                              CommRole::weight_gradients)),
      model_(device_, s.model, checked_rows_per_rank(s.global_batch, s.world),
             ParameterStorage::external) {
  model_.set_hooks(this);
}

template <typename T>
std::string DataParallelBase<T>::grid() const {
  return "dp=" + std::to_string(comm_->size()) + ",zero=" + std::to_string(config_.zero);
}

template <typename T>
BatchSlice DataParallelBase<T>::batch_slice(int64_t global_rows) const {
  return even_batch_slice(global_rows, comm_->rank(), comm_->size());
}

template <typename T>
void DataParallelBase<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) {
  start_backward_pass();
  model_.set_timer(&timer);
  model_.backward(rows, global_batch, false);
  finish_gradient_sync();
}

template class DataParallelBase<float>;
template class DataParallelBase<double>;

}  // namespace mlps

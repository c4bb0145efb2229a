#include "src/schemes/data/data_parallel_base.h"

#include "src/base/errors.h"
#include "src/comm/broadcast_refusal.h"
#include "src/schemes/data/data_volumes.h"

namespace mlps {

namespace {

int world_size(MPI_Comm world) {
  int ranks = 1;
  MPI_Comm_size(world, &ranks);
  return ranks;
}

int64_t checked_rows_per_rank(int64_t global_batch, MPI_Comm comm) {
  const int ranks = world_size(comm);
  check_batch_covers_ranks(global_batch, ranks);
  return (global_batch + ranks - 1) / ranks;
}

std::vector<GridAxis> data_axes(MPI_Comm world, int shard_group) {
  const int ranks = world_size(world);
  const int group = shard_group > 0 ? shard_group : ranks;
  return {{"data", ranks / group}, {"shard", group}};
}

// The weight-gradient communicator over one axis of the grid: named "world" when it spans every
// rank (so a plain run's results keep their names), after the axis otherwise; none for a group
// of one rank, which would log traffic that moves nothing, unless `even_alone`.
std::unique_ptr<Communicator> axis_communicator(const ProcessGrid& grid, const char* axis,
                                                const TrainerSetup& s, const Device& device,
                                                std::shared_ptr<CommLog> log, bool even_alone) {
  const int size = world_size(grid.group(axis));
  if (size == 1 && !even_alone) return nullptr;
  return grid.communicator(axis, s.backend, device, size == world_size(s.world) ? "world" : axis,
                           std::move(log), CommRole::weight_gradients);
}

}  // namespace

template <typename T>
DataParallelBase<T>::DataParallelBase(const TrainerSetup& s, const DataGrid& config)
    : ForwardBackwardTrainer<T>(s), config_(config), metrics_comm_(s.world),
      grid_(data_axes(s.world, config.shard_group), s.world),
      // A run on one rank keeps plain DDP's and ZeRO's "world" communicator of one.
      comm_(axis_communicator(grid_, "shard", s, device_, this->log_, world_size(s.world) == 1)),
      replica_comm_(axis_communicator(grid_, "data", s, device_, this->log_, false)),
      model_(device_, s.model, checked_rows_per_rank(s.global_batch, s.world),
             ParameterStorage::external) {
  model_.set_hooks(this);
}

template <typename T>
std::string DataParallelBase<T>::grid() const {
  return data_grid_text(world_size(grid_.world()), config_);
}

template <typename T>
std::string DataParallelBase<T>::comm_backend() const {
  return (comm_ ? comm_ : replica_comm_)->backend();
}

template <typename T>
std::map<std::string, double> DataParallelBase<T>::analytic_bytes(bool inference,
                                                                  CommCalls* calls) const {
  // Both communicators carry weight gradients: one wire format.
  const Communicator& any = comm_ ? *comm_ : *replica_comm_;
  const size_t wire = wire_bytes(any.wire_format(), sizeof(Acc<T>));
  // Typed 16-bit values are all-gathered as they are; the emulation's go on the wire.
  const size_t gathered = is_16bit_v<T> ? sizeof(T) : wire;
  return data_comm_bytes(this->model_.config(), config_, world_size(grid_.world()),
                         sizeof(Acc<T>), wire, inference, calls, gathered);
}

template <typename T>
BatchSlice DataParallelBase<T>::batch_slice(int64_t global_rows) const {
  int rank = 0;
  MPI_Comm_rank(grid_.world(), &rank);
  return even_batch_slice(global_rows, rank, world_size(grid_.world()));
}

template <typename T>
void DataParallelBase<T>::backward(int64_t rows, int64_t global_batch, PhaseTimer& timer) {
  start_backward_pass();
  model_.set_timer(&timer);
  model_.backward(rows, global_batch, gradients_start_zero());
  finish_gradient_sync();
}

template <typename T>
void DataParallelBase<T>::add_to_optimizer(const std::function<void()>& add) {
  std::string failure;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(metrics_comm_, &rank);
  MPI_Comm_size(metrics_comm_, &ranks);
  try {
    if (config_.offload != OffloadTier::none)
      optimizer_.offload_state_to(config_.offload_dir, rank, config_.offload_params);
    add();
  } catch (const OutputError& e) {
    failure = e.what();
  }
  int first_failed = failure.empty() ? ranks : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first_failed, 1, MPI_INT, MPI_MIN, metrics_comm_);
  if (first_failed < ranks) refuse_together(metrics_comm_, failure, first_failed);
}

template class DataParallelBase<float>;
template class DataParallelBase<double>;
template class DataParallelBase<bf16>;
template class DataParallelBase<fp16>;

}  // namespace mlps

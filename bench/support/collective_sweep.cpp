#include "bench/support/collective_sweep.h"

#include <mpi.h>

#include "bench/support/comm_bench_report.h"
#include "src/device/buffer.h"

namespace mlps::comm_bench {
namespace {

// One check iteration's buffers on the host. Outputs start at -1, which no result equals.
template <typename T>
struct CheckData {
  std::vector<T> send, recv, expected;
};

template <typename T>
CheckData<T> check_data(const CollectiveEngine& engine, const CollectiveShape& s, int rank,
                        int ranks, int64_t k) {
  CheckData<T> d;
  d.send.resize(static_cast<size_t>(s.send_count));
  d.recv.assign(static_cast<size_t>(s.recv_count), T(-1));
  d.expected.resize(static_cast<size_t>(s.recv_count));
  for (int64_t i = 0; i < s.send_count; ++i) d.send[i] = static_cast<T>(check_input(rank, i, k));
  for (int64_t i = 0; i < s.recv_count; ++i) {
    d.expected[i] = static_cast<T>(engine.expected(s, rank, ranks, i, k));
    if (engine.in_place_at_root && rank == kBroadcastRoot) d.recv[i] = d.expected[i];
  }
  return d;
}

struct SizeResult {
  double seconds = 0;  // per call, max over ranks
  int64_t wrong = -1;  // over ranks and check iterations; -1 when not checked
};

// Runs one collective at one size after another on buffers sized for the largest.
template <typename T>
class SizeRunner {
 public:
  SizeRunner(Device& device, Communicator& comm, const CollectiveEngine& engine,
             const CommBenchOptions& o)
      : device_(device), comm_(comm), engine_(engine), o_(o),
        evict_(device, (*parse_bytes(o.evict_bytes) + static_cast<int64_t>(sizeof(T)) - 1) /
                           static_cast<int64_t>(sizeof(T))) {}

  SizeResult run(const CollectiveShape& s, Buffer<T>& send, Buffer<T>& recv) {
    // The timed iterations move the first check iteration's inputs.
    upload(check_data<T>(engine_, s, comm_.rank(), comm_.size(), 0), send, recv);
    for (int64_t i = 0; i < o_.warmup_iters; ++i) call(s, send, recv);
    device_.synchronize();

    SizeResult result{
        evict_.size() > 0 ? timed_alone(s, send, recv) : timed_in_a_row(s, send, recv), -1};
    MPI_Allreduce(MPI_IN_PLACE, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    if (o_.check_iters > 0) {
      int64_t wrong = 0;
      for (int64_t k = 0; k < o_.check_iters; ++k) wrong += check(s, send, recv, k);
      MPI_Allreduce(&wrong, &result.wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    comm_.log().take_totals();  // the sweep's own timing is what counts here
    comm_.log().take_blocked_seconds();
    return result;
  }

 private:
  void call(const CollectiveShape& s, Buffer<T>& send, Buffer<T>& recv) {
    engine_.call(comm_, send.data(), recv.data(), s, data_type_of<T>());
  }

  // nccl-tests' way: the timed calls back to back; seconds per call.
  double timed_in_a_row(const CollectiveShape& s, Buffer<T>& send, Buffer<T>& recv) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int64_t i = 0; i < o_.iters; ++i) call(s, send, recv);
    device_.synchronize();
    return (MPI_Wtime() - start) / static_cast<double>(o_.iters);
  }

  // --evict-bytes: each call after writing other memory, as a step's compute leaves the caches,
  // timed alone after a barrier; the mean.
  double timed_alone(const CollectiveShape& s, Buffer<T>& send, Buffer<T>& recv) {
    double seconds = 0;
    for (int64_t i = 0; i < o_.iters; ++i) {
      evict_.zero();
      device_.synchronize();
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      call(s, send, recv);
      device_.synchronize();
      seconds += MPI_Wtime() - start;
    }
    return seconds / static_cast<double>(o_.iters);
  }

  void upload(const CheckData<T>& d, Buffer<T>& send, Buffer<T>& recv) {
    device_.to_device(send.data(), d.send.data(), d.send.size() * sizeof(T));
    device_.to_device(recv.data(), d.recv.data(), d.recv.size() * sizeof(T));
  }

  int64_t check(const CollectiveShape& s, Buffer<T>& send, Buffer<T>& recv, int64_t k) {
    const CheckData<T> d = check_data<T>(engine_, s, comm_.rank(), comm_.size(), k);
    upload(d, send, recv);
    call(s, send, recv);
    device_.synchronize();
    std::vector<T> result(d.expected.size());
    device_.to_host(result.data(), recv.data(), result.size() * sizeof(T));
    int64_t wrong = 0;
    for (size_t i = 0; i < result.size(); ++i) wrong += result[i] != d.expected[i];
    return wrong;
  }

  Device& device_;
  Communicator& comm_;
  const CollectiveEngine& engine_;
  const CommBenchOptions& o_;
  Buffer<T> evict_;  // --evict-bytes of other memory (empty without)
};

template <typename T>
CommBenchSweep sweep(Device& device, Communicator& comm, const CollectiveEngine& engine,
                     int64_t min_bytes, int64_t max_bytes, const CommBenchOptions& o) {
  const int ranks = comm.size();
  const std::vector<CollectiveShape> shapes =
      sweep_shapes(engine, min_bytes, max_bytes, o.step_factor, sizeof(T), ranks);
  const double factor = bus_bandwidth_factor(engine.kind, ranks);
  const bool root = comm.rank() == 0;
  if (root) print_sweep_title(engine);

  // Buffers for the largest size serve every size.
  Buffer<T> send(device, shapes.back().send_count);
  Buffer<T> recv(device, shapes.back().recv_count);
  SizeRunner<T> runner(device, comm, engine, o);
  CommBenchSweep out;
  out.op = engine.name;
  for (const CollectiveShape& s : shapes) {
    const SizeResult r = runner.run(s, send, recv);
    const double algbw = static_cast<double>(s.bytes) / r.seconds / 1e9;
    out.bytes.push_back(s.bytes);
    out.count.push_back(s.count);
    out.time_seconds.push_back(r.seconds);
    out.algbw.push_back(algbw);
    out.busbw.push_back(algbw * factor);
    out.wrong.push_back(r.wrong);
    if (root)
      print_sweep_row(s, sizeof(T) == 4 ? "float" : "double", r.seconds, algbw, algbw * factor,
                      r.wrong);
  }
  return out;
}

}  // namespace

std::vector<CollectiveShape> sweep_shapes(const CollectiveEngine& engine, int64_t min_bytes,
                                          int64_t max_bytes, int64_t factor,
                                          int64_t element_bytes, int ranks) {
  std::vector<CollectiveShape> shapes;
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    const CollectiveShape s = engine.shape(bytes, element_bytes, ranks);
    if (shapes.empty() || shapes.back().bytes != s.bytes) shapes.push_back(s);
    if (bytes > max_bytes / factor) break;
  }
  return shapes;
}

SweepMemory sweep_memory(const CollectiveEngine& engine, int64_t min_bytes, int64_t max_bytes,
                         const CommBenchOptions& o, int ranks) {
  const int64_t element = o.datatype == "double" ? 8 : 4;
  const CollectiveShape s =
      sweep_shapes(engine, min_bytes, max_bytes, o.step_factor, element, ranks).back();
  const auto send = static_cast<double>(s.send_count * element);
  const auto recv = static_cast<double>(s.recv_count * element);
  const auto evict = static_cast<double>(*parse_bytes(o.evict_bytes));
  return {send + recv + evict, send + 3 * recv};
}

CommBenchSweep sweep_collective(Device& device, Communicator& comm, const CollectiveEngine& engine,
                                int64_t min_bytes, int64_t max_bytes, const CommBenchOptions& o) {
  return o.datatype == "double" ? sweep<double>(device, comm, engine, min_bytes, max_bytes, o)
                                : sweep<float>(device, comm, engine, min_bytes, max_bytes, o);
}

}  // namespace mlps::comm_bench

// bin/bench_comm: message-size sweeps of every collective of the Comm seam, in the manner of
// nccl-tests (all_reduce_perf and friends, same flags and size conventions): per size a warm-up,
// a timed loop and check iterations on inputs whose results are exact integers. The table goes
// to stdout, the sweeps to an HDF5 file (results/README.md, "Collective benchmark files"). Exit
// status 0 when every element was right, 1 otherwise, 2 for bad options.
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "src/buffer.h"
#include "src/cli_validators.h"
#include "src/comm/communicator.h"
#include "src/comm/make_communicator.h"
#include "src/comm/process_placement.h"
#include "src/device.h"
#include "src/errors.h"
#include "src/mpi_session.h"
#include "src/results/comm_bench_writer.h"
#include "src/results/run_info.h"

namespace {

using mlps::CommKind;

// Default largest message: nccl-tests' 32M on GPUs, 8M on the CPU backend. With ranks
// oversubscribing cores a call costs scheduler time slices whatever its size, so the default
// sweep of all five collectives (4 ranks on 2 idle cores) takes about half a minute.
constexpr int64_t kDefaultMaxBytesCuda = int64_t{32} << 20;
constexpr int64_t kDefaultMaxBytesCpu = int64_t{8} << 20;
constexpr int kBroadcastRoot = 0;

struct BenchOptions {
  std::string min_bytes = "8";
  std::string max_bytes;  // empty: the device's default
  int64_t step_factor = 2;
  int64_t iters = 20;
  int64_t warmup_iters = 5;
  int64_t check_iters = 1;
  std::string op = "all";
  std::string datatype = "float";
  std::string device = "auto";
  std::string comm = "auto";
  std::string out;  // empty: results/bench/comm-<backend>-<ranks>.h5
};

struct OpName {
  const char* name;  // the --op name and the HDF5 group
  CommKind kind;
  const char* note;  // for the table's title
};
constexpr OpName kOps[] = {
    {"allreduce", CommKind::all_reduce, "sum, out of place"},
    {"allgather", CommKind::all_gather, "size: the gathered output"},
    {"reduce_scatter", CommKind::reduce_scatter, "sum, size: the whole input"},
    {"broadcast", CommKind::broadcast, "root 0, in place"},
    {"sendrecv", CommKind::send_recv, "ring: to rank+1, from rank-1"}};

// "64", "64K", "32M", "1G" (binary multiples, as nccl-tests reads -b and -e); nullopt if not.
std::optional<int64_t> parse_bytes(const std::string& text) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || value < 0) return std::nullopt;
  int shift = 0;
  if (used + 1 == text.size()) {
    switch (text[used]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: return std::nullopt;
    }
  } else if (used != text.size()) {
    return std::nullopt;
  }
  if (value > (int64_t{1} << (50 - shift))) return std::nullopt;  // beyond any buffer
  return static_cast<int64_t>(value) << shift;
}

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto bytes = parse_bytes(text);
        if (!bytes) return "'" + text + "' is not a size in bytes (e.g. 64, 64K, 32M, 1G)";
        if (*bytes < 1) return "must be at least 1 byte, not " + text;
        return "";
      },
      "BYTES");
}

// Returns false when --help was asked for (after printing it on rank 0).
bool parse_options(int argc, char** argv, int rank, BenchOptions& o) {
  CLI::App app("Sweep message sizes for each collective of the Comm seam (MPI or NCCL) and "
               "report time, algbw, busbw and wrong elements, as nccl-tests does.",
               "bench_comm");
  app.option_defaults()->always_capture_default();
  app.add_option("-b,--minbytes", o.min_bytes, "smallest message size (K, M, G suffixes)")
      ->check(byte_size());
  app.add_option("-e,--maxbytes", o.max_bytes, "largest message size (default 32M on cuda, 8M "
                 "on cpu)")->check(byte_size());
  app.add_option("-f,--stepfactor", o.step_factor, "multiply the size by this between steps")
      ->check(mlps::integer_at_least(2));
  app.add_option("-n,--iters", o.iters, "timed iterations per size")
      ->check(mlps::integer_at_least(1));
  app.add_option("-w,--warmup_iters", o.warmup_iters, "untimed iterations before them")
      ->check(mlps::integer_at_least(0));
  app.add_option("-c,--check", o.check_iters, "iterations checked for correctness per size "
                 "(0: none)")->check(mlps::integer_at_least(0));
  app.add_option("--op", o.op, "collective: allreduce, allgather, reduce_scatter, broadcast, "
                 "sendrecv or all")
      ->check(CLI::IsMember({"all", "allreduce", "allgather", "reduce_scatter", "broadcast",
                             "sendrecv"}));
  app.add_option("-d,--datatype", o.datatype, "element type: float or double")
      ->check(CLI::IsMember({"float", "double"}));
  app.add_option("--device", o.device, "auto (cuda when built with CUDA and a GPU is visible), "
                 "cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--comm", o.comm, "collectives backend: auto, mpi or nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  app.add_option("--out", o.out, "HDF5 result file (default results/bench/comm-<backend>-"
                 "<ranks>.h5)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (rank == 0) std::printf("%s", app.help().c_str());
    return false;
  } catch (const CLI::ParseError& e) {
    throw mlps::InputError(e.what());
  }
  return true;
}

// Element counts of one call. Sizes follow nccl-tests: all-gather counts the gathered output,
// reduce-scatter the whole input, the others the one buffer.
struct Shape {
  int64_t bytes = 0;
  int64_t count = 0;       // elements in bytes
  int64_t send_count = 0;  // elements this rank sends (broadcast: unused, it runs in place)
  int64_t recv_count = 0;  // elements this rank receives
};

// The requested size rounded down to whole elements (for all-gather and reduce-scatter, whole
// elements per rank), and at least one of those.
Shape shape_of(CommKind kind, int64_t requested_bytes, int64_t element_bytes, int ranks) {
  const bool split = kind == CommKind::all_gather || kind == CommKind::reduce_scatter;
  const int64_t unit = element_bytes * (split ? ranks : 1);
  Shape s;
  s.bytes = std::max(unit, requested_bytes / unit * unit);
  s.count = s.bytes / element_bytes;
  s.send_count = kind == CommKind::all_gather ? s.count / ranks : s.count;
  s.recv_count = kind == CommKind::reduce_scatter ? s.count / ranks : s.count;
  return s;
}

// min, min·f, min·f², ... up to max, rounded by shape_of; sizes that round alike run once.
std::vector<Shape> sweep_shapes(CommKind kind, int64_t min_bytes, int64_t max_bytes,
                                int64_t factor, int64_t element_bytes, int ranks) {
  std::vector<Shape> shapes;
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    const Shape s = shape_of(kind, bytes, element_bytes, ranks);
    if (shapes.empty() || shapes.back().bytes != s.bytes) shapes.push_back(s);
    if (bytes > max_bytes / factor) break;
  }
  return shapes;
}

// One call of the collective, waited for. Send/recv is a ring: to rank+1, from rank−1.
void run_once(mlps::Communicator& comm, CommKind kind, const void* send, void* recv,
              const Shape& s, mlps::DataType type) {
  switch (kind) {
    case CommKind::all_reduce:
      comm.all_reduce_async(send, recv, s.count, type)->wait();
      return;
    case CommKind::all_gather:
      comm.all_gather_async(send, recv, s.send_count, type)->wait();
      return;
    case CommKind::reduce_scatter:
      comm.reduce_scatter_async(send, recv, s.recv_count, type)->wait();
      return;
    case CommKind::broadcast:
      comm.broadcast_async(recv, s.count, type, kBroadcastRoot)->wait();
      return;
    case CommKind::send_recv: {
      const int next = (comm.rank() + 1) % comm.size();
      const int previous = (comm.rank() + comm.size() - 1) % comm.size();
      mlps::PendingComm received = comm.recv_async(recv, s.count, type, previous);
      mlps::PendingComm sent = comm.send_async(send, s.count, type, next);
      sent->wait();
      received->wait();
      return;
    }
  }
}

// Check inputs: element i of rank r's input in check iteration k is (r + 1) + (i + k) % 7, small
// integers whose sums over ranks are exact in float and double (k shifts the pattern so a stale
// result from the previous iteration is caught). Outputs start at -1, which no result equals.
template <typename T>
struct CheckData {
  std::vector<T> send, recv, expected;
};

template <typename T>
CheckData<T> check_data(CommKind kind, const Shape& s, int rank, int ranks, int64_t k) {
  const auto input = [k](int r, int64_t i) { return static_cast<T>(r + 1 + (i + k) % 7); };
  // Σ_q input(q, i) = n(n+1)/2 + n·((i + k) % 7)
  const auto sum = [k, ranks](int64_t i) {
    return static_cast<T>(int64_t{ranks} * (ranks + 1) / 2 + int64_t{ranks} * ((i + k) % 7));
  };
  CheckData<T> d;
  d.send.resize(static_cast<size_t>(s.send_count));
  d.recv.assign(static_cast<size_t>(s.recv_count), T(-1));
  d.expected.resize(static_cast<size_t>(s.recv_count));
  for (int64_t i = 0; i < s.send_count; ++i) d.send[i] = input(rank, i);
  for (int64_t i = 0; i < s.recv_count; ++i) {
    switch (kind) {
      case CommKind::all_reduce:
        d.expected[i] = sum(i);
        break;
      case CommKind::all_gather:
        d.expected[i] = input(static_cast<int>(i / s.send_count), i % s.send_count);
        break;
      case CommKind::reduce_scatter:
        d.expected[i] = sum(rank * s.recv_count + i);
        break;
      case CommKind::broadcast:
        d.expected[i] = input(kBroadcastRoot, i);
        if (rank == kBroadcastRoot) d.recv[i] = d.expected[i];  // in place: the root's input
        break;
      case CommKind::send_recv:
        d.expected[i] = input((rank + ranks - 1) % ranks, i);
        break;
    }
  }
  return d;
}

struct SizeResult {
  Shape shape;
  double seconds = 0;  // per call, max over ranks
  int64_t wrong = -1;  // over ranks and check iterations; -1 when not checked
};

template <typename T>
class CollectiveSweep {
 public:
  CollectiveSweep(mlps::Device& device, mlps::Communicator& comm, CommKind kind,
                  const BenchOptions& o)
      : device_(device), comm_(comm), kind_(kind), o_(o) {}

  SizeResult run(const Shape& s, mlps::Buffer<T>& send, mlps::Buffer<T>& recv) {
    // The timed iterations move the first check iteration's inputs.
    upload(check_data<T>(kind_, s, comm_.rank(), comm_.size(), 0), send, recv);
    for (int64_t i = 0; i < o_.warmup_iters; ++i) call(s, send, recv);
    device_.synchronize();

    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int64_t i = 0; i < o_.iters; ++i) call(s, send, recv);
    device_.synchronize();
    SizeResult result{s, (MPI_Wtime() - start) / static_cast<double>(o_.iters), -1};
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
  void call(const Shape& s, mlps::Buffer<T>& send, mlps::Buffer<T>& recv) {
    run_once(comm_, kind_, send.data(), recv.data(), s, mlps::data_type_of<T>());
  }

  void upload(const CheckData<T>& d, mlps::Buffer<T>& send, mlps::Buffer<T>& recv) {
    device_.to_device(send.data(), d.send.data(), d.send.size() * sizeof(T));
    device_.to_device(recv.data(), d.recv.data(), d.recv.size() * sizeof(T));
  }

  int64_t check(const Shape& s, mlps::Buffer<T>& send, mlps::Buffer<T>& recv, int64_t k) {
    const CheckData<T> d = check_data<T>(kind_, s, comm_.rank(), comm_.size(), k);
    upload(d, send, recv);
    call(s, send, recv);
    device_.synchronize();
    std::vector<T> result(d.expected.size());
    device_.to_host(result.data(), recv.data(), result.size() * sizeof(T));
    int64_t wrong = 0;
    for (size_t i = 0; i < result.size(); ++i) wrong += result[i] != d.expected[i];
    return wrong;
  }

  mlps::Device& device_;
  mlps::Communicator& comm_;
  CommKind kind_;
  const BenchOptions& o_;
};

std::string format_time_us(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds * 1e6 < 1e5 ? "%10.2f" : "%10.1f", seconds * 1e6);
  return text;
}

// Sweeps one collective, printing a row per size on rank 0 as it finishes.
template <typename T>
mlps::CommBenchSweep sweep(mlps::Device& device, mlps::Communicator& comm, const OpName& op,
                           int64_t min_bytes, int64_t max_bytes, const BenchOptions& o) {
  const int ranks = comm.size();
  const std::vector<Shape> shapes =
      sweep_shapes(op.kind, min_bytes, max_bytes, o.step_factor, sizeof(T), ranks);
  const double factor = mlps::bus_bandwidth_factor(op.kind, ranks);
  const bool root = comm.rank() == 0;
  if (root) {
    std::printf("#\n# %s (%s)\n", op.name, op.note);
    std::printf("#%11s  %12s  %8s  %10s  %8s  %8s  %7s\n", "size", "count", "type", "time",
                "algbw", "busbw", "#wrong");
    std::printf("#%11s  %12s  %8s  %10s  %8s  %8s  %7s\n", "(B)", "(elements)", "", "(us)",
                "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  // Buffers for the largest size serve every size.
  mlps::Buffer<T> send(device, shapes.back().send_count);
  mlps::Buffer<T> recv(device, shapes.back().recv_count);
  CollectiveSweep<T> bench(device, comm, op.kind, o);
  mlps::CommBenchSweep out;
  out.op = op.name;
  for (const Shape& s : shapes) {
    const SizeResult r = bench.run(s, send, recv);
    const double algbw = static_cast<double>(s.bytes) / r.seconds / 1e9;
    out.bytes.push_back(s.bytes);
    out.count.push_back(s.count);
    out.time_seconds.push_back(r.seconds);
    out.algbw.push_back(algbw);
    out.busbw.push_back(algbw * factor);
    out.wrong.push_back(r.wrong);
    if (root) {
      const std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
      std::printf("%12lld  %12lld  %8s  %s  %8.3f  %8.3f  %7s\n",
                  static_cast<long long>(s.bytes), static_cast<long long>(s.count),
                  sizeof(T) == 4 ? "float" : "double", format_time_us(r.seconds).c_str(), algbw,
                  algbw * factor, wrong.c_str());
      std::fflush(stdout);
    }
  }
  return out;
}

// nccl-tests' "Using devices" block: one line per rank, gathered to rank 0.
void print_ranks(const mlps::RankPlacement& placement, mlps::DeviceKind device, int gpu) {
  constexpr int kLine = 256;
  char line[kLine] = {};
  const std::string where =
      device == mlps::DeviceKind::cuda ? "GPU " + std::to_string(gpu) : std::string("cpu");
  std::snprintf(line, sizeof line, "#  Rank %3d Pid %7d on %s (local rank %d of %d) device %s",
                placement.world_rank, static_cast<int>(getpid()), placement.host.c_str(),
                placement.local_rank, placement.local_size, where.c_str());
  std::vector<char> all(placement.world_rank == 0 ? size_t{kLine} * placement.world_size : 0);
  MPI_Gather(line, kLine, MPI_CHAR, all.data(), kLine, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (placement.world_rank != 0) return;
  std::printf("#\n# Using devices\n");
  for (int r = 0; r < placement.world_size; ++r) std::printf("%s\n", &all[size_t{kLine} * r]);
}

int run(int argc, char** argv, const mlps::MpiSession& mpi) {
  BenchOptions o;
  if (!parse_options(argc, argv, mpi.rank(), o)) return 0;
  const std::string start_time = mlps::utc_timestamp_now();

  mlps::check_launch_matches_slurm(mpi.size());
  const mlps::RankPlacement placement = mlps::discover_placement(MPI_COMM_WORLD);
  const mlps::DeviceKind device_kind = mlps::resolve_device(o.device);
  const int64_t min_bytes = *parse_bytes(o.min_bytes);
  const int64_t max_bytes =
      o.max_bytes.empty()
          ? (device_kind == mlps::DeviceKind::cuda ? kDefaultMaxBytesCuda : kDefaultMaxBytesCpu)
          : *parse_bytes(o.max_bytes);
  if (min_bytes > max_bytes)
    throw mlps::InputError("--minbytes " + o.min_bytes + " is larger than --maxbytes " +
                           (o.max_bytes.empty() ? std::to_string(max_bytes) : o.max_bytes));
  const int gpu = mlps::bind_gpu(placement, device_kind);
  const mlps::CommBackend backend =
      mlps::resolve_comm_backend(o.comm, device_kind, placement, MPI_COMM_WORLD);
  mlps::Device device(device_kind);
  auto comm = mlps::make_communicator(backend, device, MPI_COMM_WORLD, "world",
                                      std::make_shared<mlps::CommLog>());
  const std::string hosts = mlps::host_names(MPI_COMM_WORLD);
  const int ranks = mpi.size();
  const bool root = mpi.rank() == 0;

  if (root) {
    std::printf("# bench_comm: %d ranks, backend %s, device %s, datatype %s, hosts %s\n", ranks,
                mlps::to_string(backend), mlps::to_string(device_kind), o.datatype.c_str(),
                hosts.c_str());
    std::printf("# minBytes %lld maxBytes %lld step: %lld(factor) warmup iters: %lld iters: %lld "
                "check iters: %lld\n",
                static_cast<long long>(min_bytes), static_cast<long long>(max_bytes),
                static_cast<long long>(o.step_factor), static_cast<long long>(o.warmup_iters),
                static_cast<long long>(o.iters), static_cast<long long>(o.check_iters));
    std::printf("# time: per call, the slowest rank's mean over the timed iterations; algbw = "
                "size / time; busbw = algbw x nccl-tests' bus factor\n");
  }
  print_ranks(placement, device_kind, gpu);

  mlps::CommBenchRecord record;
  for (const OpName& op : kOps) {
    if (o.op != "all" && o.op != op.name) continue;
    record.sweeps.push_back(o.datatype == "double"
                                ? sweep<double>(device, *comm, op, min_bytes, max_bytes, o)
                                : sweep<float>(device, *comm, op, min_bytes, max_bytes, o));
  }

  int64_t wrong = 0;
  bool checked = false;
  double busbw_sum = 0;
  int64_t rows = 0;
  for (const mlps::CommBenchSweep& s : record.sweeps) {
    for (size_t i = 0; i < s.bytes.size(); ++i) {
      checked = checked || s.wrong[i] >= 0;
      wrong += std::max<int64_t>(s.wrong[i], 0);
      busbw_sum += s.busbw[i];
      ++rows;
    }
  }
  const double avg_busbw = rows > 0 ? busbw_sum / static_cast<double>(rows) : 0;
  const std::string out = o.out.empty() ? "results/bench/comm-" +
                                              std::string(mlps::to_string(backend)) + "-" +
                                              std::to_string(ranks) + ".h5"
                                        : o.out;
  if (root) {
    std::printf("#\n# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
                !checked ? "(not checked)" : wrong == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %.3f\n", avg_busbw);
    for (const mlps::CommBenchSweep& s : record.sweeps) {
      const double op_sum = std::accumulate(s.busbw.begin(), s.busbw.end(), 0.0);
      std::printf("#   %-15s %.3f GB/s\n", s.op.c_str(),
                  s.busbw.empty() ? 0.0 : op_sum / static_cast<double>(s.busbw.size()));
    }

    record.string_attributes = {{"backend", mlps::to_string(backend)},
                                {"device", mlps::to_string(device_kind)},
                                {"datatype", o.datatype},
                                {"hosts", hosts},
                                {"command_line", mlps::command_line(argc, argv)},
                                {"git_commit", mlps::git_commit()},
                                {"mpi_version", mlps::mpi_library_version()},
                                {"nccl_version", mlps::nccl_version()},
                                {"cuda_version", mlps::cuda_version()},
                                {"hdf5_version", mlps::hdf5_library_version()},
                                {"start_time", start_time}};
    record.integer_attributes = {{"ranks", ranks},
                                 {"min_bytes", min_bytes},
                                 {"max_bytes", max_bytes},
                                 {"step_factor", o.step_factor},
                                 {"iters", o.iters},
                                 {"warmup_iters", o.warmup_iters},
                                 {"check_iters", o.check_iters},
                                 {"broadcast_root", kBroadcastRoot},
                                 {"wrong", checked ? wrong : -1}};
    record.real_attributes = {{"avg_busbw", avg_busbw}};
    mlps::write_comm_bench_hdf5(out, record);
    std::printf("# Results: %s\n", out.c_str());
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("bench_comm", [&] { return run(argc, argv, mpi); });
}

// bin/bench_comm: message-size sweeps of every collective of the Comm seam, in the manner of
// nccl-tests (all_reduce_perf and friends, same flags and size conventions): per size a warm-up,
// a timed loop and check iterations on inputs whose results are exact integers (--evict-bytes:
// each timed call alone, after writing other memory, for buffers out of the caches). The table
// goes to stdout, the sweeps to an HDF5 file (results/README.md, "Collective benchmark files").
// Exit status 0 when every element was right, 1 otherwise, 2 for bad options.
// The pieces live in bench/support: the options, one engine per collective, the sweep driver
// with its exact-answer check, and the table/HDF5 output.
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <string>

#include "bench/support/collective_engines.h"
#include "bench/support/collective_sweep.h"
#include "bench/support/comm_bench_options.h"
#include "bench/support/comm_bench_report.h"
#include "src/comm/make_communicator.h"
#include "src/comm/process_placement.h"
#include "src/device/device.h"
#include "src/driver/run_context.h"
#include "src/driver/startup_agreement.h"
#include "src/driver/training_driver.h"
#include "src/base/errors.h"
#include "src/memory/available_memory.h"
#include "src/comm/mpi_session.h"
#include "src/results/comm_bench_writer.h"
#include "src/results/run_info.h"

namespace mlps::comm_bench {
namespace {

// The largest sweep's buffers against the memory each rank has, before any is allocated.
void check_sweeps_fit(const CommBenchOptions& o, const CommBenchSetup& setup,
                      const RankPlacement& placement, int ranks) {
  SweepMemory largest;
  for (const CollectiveEngine& engine : collective_engines()) {
    if (o.op != "all" && o.op != engine.name) continue;
    const SweepMemory m = sweep_memory(engine, setup.min_bytes, setup.max_bytes, o, ranks);
    largest.device = std::max(largest.device, m.device);
    largest.host = std::max(largest.host, m.host);
  }
  const std::string what = "the largest size's buffers; lower --maxbytes";
  if (setup.device == DeviceKind::cuda) {
    check_memory_fits(MPI_COMM_WORLD, largest.device, "on the GPU, " + what,
                      available_memory_per_rank(DeviceKind::cuda, placement));
    check_memory_fits(MPI_COMM_WORLD, largest.host, "on the host, " + what,
                      available_memory_per_rank(DeviceKind::cpu, placement));
  } else {
    check_memory_fits(MPI_COMM_WORLD, largest.device + largest.host, what,
                      available_memory_per_rank(DeviceKind::cpu, placement));
  }
}

int run(int argc, char** argv, const MpiSession& mpi) {
  CommBenchOptions o;
  // Every rank parses, then one collective: a rank refused alone must not leave the others
  // waiting in their first collective (src/driver/startup_agreement.h).
  std::string refusal;
  int help = 0;
  try {
    help = parse_comm_bench_options(argc, argv, mpi.rank(), o) ? 0 : 1;
  } catch (const InputError& e) {
    refusal = e.what();
  }
  agree_options_accepted(MPI_COMM_WORLD, refusal);
  MPI_Allreduce(MPI_IN_PLACE, &help, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (help) return 0;
  CommBenchSetup setup;
  setup.start_time = utc_timestamp_now();
  setup.command_line = command_line(argc, argv);

  check_launch_matches_slurm(mpi.size());
  const RankPlacement placement = discover_placement(MPI_COMM_WORLD);
  setup.device = resolve_device(o.device);
  setup.min_bytes = *parse_bytes(o.min_bytes);
  setup.max_bytes = o.max_bytes.empty() ? (setup.device == DeviceKind::cuda ? kDefaultMaxBytesCuda
                                                                            : kDefaultMaxBytesCpu)
                                        : *parse_bytes(o.max_bytes);
  setup.evict_bytes = *parse_bytes(o.evict_bytes);
  if (setup.min_bytes > setup.max_bytes)
    throw InputError("--minbytes " + o.min_bytes + " is larger than --maxbytes " +
                     (o.max_bytes.empty() ? std::to_string(setup.max_bytes) : o.max_bytes));
  // As the training runs: a rank's CPU kernels (--evict-bytes' writes) on its share of the cores,
  // not on threads that would spin on the core another rank is communicating on.
  share_node_cores(placement, setup.device);
  const int gpu = bind_gpu(placement, setup.device);
  check_sweeps_fit(o, setup, placement, mpi.size());  // on the bound GPU
  setup.backend = resolve_comm_backend(o.comm, setup.device, placement, MPI_COMM_WORLD);
  Device device(setup.device);
  auto comm = make_communicator(setup.backend, device, MPI_COMM_WORLD, "world",
                                std::make_shared<CommLog>());
  setup.hosts = host_names(MPI_COMM_WORLD);
  setup.ranks = mpi.size();
  const bool root = mpi.rank() == 0;
  const std::string out = o.out.empty() ? "results/bench/comm-" +
                                              std::string(to_string(setup.backend)) + "-" +
                                              std::to_string(setup.ranks) + ".h5"
                                        : o.out;
  // Before the sweep, so that a bad --out costs no benchmark time.
  check_output_path(RunContext{"bench_comm", setup.command_line, MPI_COMM_WORLD, mpi.rank(),
                               mpi.size()},
                    out);

  if (root) print_run_header(setup, o);
  print_ranks(placement, setup.device, gpu);

  CommBenchRecord record;
  for (const CollectiveEngine& engine : collective_engines()) {
    if (o.op != "all" && o.op != engine.name) continue;
    record.sweeps.push_back(
        sweep_collective(device, *comm, engine, setup.min_bytes, setup.max_bytes, o));
  }

  const CommBenchSummary summary = summarize(record);
  if (root) {
    print_summary(summary, record);
    write_result_file(out, setup, o, summary, record);
  }
  return summary.wrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace mlps::comm_bench

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("bench_comm", [&] { return mlps::comm_bench::run(argc, argv, mpi); });
}

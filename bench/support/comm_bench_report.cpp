#include "bench/support/comm_bench_report.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

#include "src/results/run_info.h"

namespace mlps::comm_bench {
namespace {

std::string format_time_us(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds * 1e6 < 1e5 ? "%10.2f" : "%10.1f", seconds * 1e6);
  return text;
}

}  // namespace

void print_run_header(const CommBenchSetup& setup, const CommBenchOptions& o) {
  std::printf("# bench_comm: %d ranks, backend %s, device %s, datatype %s, hosts %s\n",
              setup.ranks, to_string(setup.backend), to_string(setup.device), o.datatype.c_str(),
              setup.hosts.c_str());
  std::printf("# minBytes %lld maxBytes %lld step: %lld(factor) warmup iters: %lld iters: %lld "
              "check iters: %lld\n",
              static_cast<long long>(setup.min_bytes), static_cast<long long>(setup.max_bytes),
              static_cast<long long>(o.step_factor), static_cast<long long>(o.warmup_iters),
              static_cast<long long>(o.iters), static_cast<long long>(o.check_iters));
  std::printf("# time: per call, the slowest rank's mean over the timed iterations; algbw = "
              "size / time; busbw = algbw x nccl-tests' bus factor\n");
  if (setup.evict_bytes > 0)
    std::printf("# evict: each rank writes %lld bytes of other memory before each timed call, "
                "timed alone after a barrier (buffers out of the caches)\n",
                static_cast<long long>(setup.evict_bytes));
}

void print_ranks(const RankPlacement& placement, DeviceKind device, int gpu) {
  constexpr int kLine = 256;  // fixed-width lines make the gather one call
  char line[kLine] = {};
  const std::string where =
      device == DeviceKind::cuda ? "GPU " + std::to_string(gpu) : std::string("cpu");
  std::snprintf(line, sizeof line, "#  Rank %3d Pid %7d on %s (local rank %d of %d) device %s",
                placement.world_rank, static_cast<int>(getpid()), placement.host.c_str(),
                placement.local_rank, placement.local_size, where.c_str());
  std::vector<char> all(placement.world_rank == 0 ? size_t{kLine} * placement.world_size : 0);
  MPI_Gather(line, kLine, MPI_CHAR, all.data(), kLine, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (placement.world_rank != 0) return;
  std::printf("#\n# Using devices\n");
  for (int r = 0; r < placement.world_size; ++r) std::printf("%s\n", &all[size_t{kLine} * r]);
}

// Rows are flushed as they come so a long sweep shows progress.
void print_sweep_title(const CollectiveEngine& engine) {
  std::printf("#\n# %s (%s)\n", engine.name, engine.note);
  std::printf("#%11s  %12s  %8s  %10s  %8s  %8s  %7s\n", "size", "count", "type", "time",
              "algbw", "busbw", "#wrong");
  std::printf("#%11s  %12s  %8s  %10s  %8s  %8s  %7s\n", "(B)", "(elements)", "", "(us)",
              "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

void print_sweep_row(const CollectiveShape& s, const char* type_name, double seconds,
                     double algbw, double busbw, int64_t wrong) {
  const std::string wrong_text = wrong < 0 ? "N/A" : std::to_string(wrong);
  std::printf("%12lld  %12lld  %8s  %s  %8.3f  %8.3f  %7s\n", static_cast<long long>(s.bytes),
              static_cast<long long>(s.count), type_name, format_time_us(seconds).c_str(), algbw,
              busbw, wrong_text.c_str());
  std::fflush(stdout);
}

CommBenchSummary summarize(const CommBenchRecord& record) {
  CommBenchSummary summary;
  double busbw_sum = 0;
  int64_t rows = 0;
  for (const CommBenchSweep& s : record.sweeps) {
    for (size_t i = 0; i < s.bytes.size(); ++i) {
      summary.checked = summary.checked || s.wrong[i] >= 0;
      summary.wrong += std::max<int64_t>(s.wrong[i], 0);
      busbw_sum += s.busbw[i];
      ++rows;
    }
  }
  summary.avg_busbw = rows > 0 ? busbw_sum / static_cast<double>(rows) : 0;
  return summary;
}

void print_summary(const CommBenchSummary& summary, const CommBenchRecord& record) {
  std::printf("#\n# Out of bounds values : %lld %s\n", static_cast<long long>(summary.wrong),
              !summary.checked ? "(not checked)" : summary.wrong == 0 ? "OK" : "FAILED");
  std::printf("# Avg bus bandwidth    : %.3f\n", summary.avg_busbw);
  for (const CommBenchSweep& s : record.sweeps) {
    const double op_sum = std::accumulate(s.busbw.begin(), s.busbw.end(), 0.0);
    std::printf("#   %-15s %.3f GB/s\n", s.op.c_str(),
                s.busbw.empty() ? 0.0 : op_sum / static_cast<double>(s.busbw.size()));
  }
}

void write_result_file(const std::string& path, const CommBenchSetup& setup,
                       const CommBenchOptions& o, const CommBenchSummary& summary,
                       CommBenchRecord& record) {
  record.string_attributes = {{"backend", to_string(setup.backend)},
                              {"device", to_string(setup.device)},
                              {"datatype", o.datatype},
                              {"hosts", setup.hosts},
                              {"command_line", setup.command_line},
                              {"git_commit", git_commit()},
                              {"mpi_version", mpi_library_version()},
                              {"nccl_version", nccl_version()},
                              {"cuda_version", cuda_version()},
                              {"hdf5_version", hdf5_library_version()},
                              {"start_time", setup.start_time}};
  record.string_attributes.merge(processor_attributes());
  record.integer_attributes = {{"ranks", setup.ranks},
                               {"min_bytes", setup.min_bytes},
                               {"max_bytes", setup.max_bytes},
                               {"step_factor", o.step_factor},
                               {"iters", o.iters},
                               {"warmup_iters", o.warmup_iters},
                               {"check_iters", o.check_iters},
                               {"broadcast_root", kBroadcastRoot},
                               {"evict_bytes", setup.evict_bytes},
                               {"wrong", summary.checked ? summary.wrong : -1}};
  record.real_attributes = {{"avg_busbw", summary.avg_busbw}};
  write_comm_bench_hdf5(path, record);
  std::printf("# Results: %s\n", path.c_str());
}

}  // namespace mlps::comm_bench

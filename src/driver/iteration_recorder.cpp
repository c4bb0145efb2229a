#include "src/driver/iteration_recorder.h"

#include <sys/resource.h>

#include <mpi.h>

#include <sstream>

namespace mlps {

namespace {

// Every rank's collective names with their kind and largest group size (the totals' other
// fields unused), merged and known to all ranks.
std::map<std::string, CommTotals> union_of_comm_names(
    const RunContext& context, const std::vector<std::map<std::string, CommTotals>>& iterations) {
  std::ostringstream mine;
  for (const auto& totals : iterations)
    for (const auto& [name, t] : totals)
      mine << name << ' ' << static_cast<int>(t.kind) << ' ' << t.group_size << '\n';
  const std::string text = mine.str();
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(context.size), offsets(context.size, 0);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, context.comm);
  for (int r = 1; r < context.size; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                 MPI_CHAR, context.comm);
  std::map<std::string, CommTotals> columns;
  std::istringstream in(all);
  std::string name;
  int kind = 0, group_size = 0;
  while (in >> name >> kind >> group_size) {
    CommTotals& c = columns[name];
    c.kind = static_cast<CommKind>(kind);
    c.group_size = std::max(c.group_size, group_size);
  }
  return columns;
}

// One value per iteration on each rank, as rank 0's [iterations × ranks] table.
IterationRankTable gather_table(const RunContext& context, const std::vector<double>& mine) {
  const auto iterations = static_cast<int64_t>(mine.size());
  std::vector<double> all(context.is_root() ? mine.size() * context.size : 0);
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
             static_cast<int>(mine.size()), MPI_DOUBLE, 0, context.comm);
  IterationRankTable table{iterations, context.size, std::vector<double>(all.size())};
  for (int64_t r = 0; r < context.size && context.is_root(); ++r)
    for (int64_t i = 0; i < iterations; ++i)
      table.values[i * context.size + r] = all[r * iterations + i];
  return table;
}

}  // namespace

IterationRecorder::IterationRecorder(const Trainer& trainer) : timing_names_(phase_names()) {
  timing_names_.push_back("exposed_comm");
  for (const auto& name : trainer.extra_timing_names()) timing_names_.push_back(name);
}

std::vector<double> IterationRecorder::end_iteration(PhaseTimer& timer, Trainer& trainer) {
  std::vector<double> seconds = timer.end_iteration();
  seconds.push_back(trainer.take_blocked_comm_seconds());
  for (double extra : trainer.take_extra_timings()) seconds.push_back(extra);
  timings_.push_back(seconds);
  comm_.push_back(trainer.take_comm_totals());
  counts_.push_back(timer.step_counts());
  return seconds;
}

void IterationRecorder::gather_into(const RunContext& context, const Trainer& trainer,
                                    RunRecord& record) const {
  for (size_t t = 0; t < timing_names_.size(); ++t) {
    std::vector<double> mine;
    for (const auto& timings : timings_) mine.push_back(timings[t]);
    record.timing[timing_names_[t]] = gather_table(context, mine);
  }
  for (const auto& [name, c] : union_of_comm_names(context, comm_)) {
    std::vector<double> bytes, seconds;
    for (const auto& totals : comm_) {
      const auto it = totals.find(name);
      bytes.push_back(it == totals.end() ? 0.0 : it->second.bytes);
      seconds.push_back(it == totals.end() ? 0.0 : it->second.seconds);
    }
    record.comm[name] = {gather_table(context, seconds), gather_table(context, bytes),
                         to_string(c.kind), c.group_size};
  }
  // /counters: the same names on every rank, as every rank's device is of one kind.
  const auto count_table = [&](auto field) {
    std::vector<double> mine;
    for (const StepCounts& c : counts_) mine.push_back(static_cast<double>(field(c)));
    return gather_table(context, mine);
  };
  record.counters["allocations"] = count_table([](const StepCounts& c) { return c.allocations; });
  record.counters["frees"] = count_table([](const StepCounts& c) { return c.frees; });
  if (!counts_.empty() && counts_.front().runtime.counted) {
    record.counters["launches"] = count_table([](const StepCounts& c) { return c.runtime.launches; });
    record.counters["host_syncs"] =
        count_table([](const StepCounts& c) { return c.runtime.host_syncs; });
    record.counters["runtime_allocations"] =
        count_table([](const StepCounts& c) { return c.runtime.allocations; });
    record.counters["runtime_frees"] =
        count_table([](const StepCounts& c) { return c.runtime.frees; });
  }
  const auto gather = [&](int64_t mine) {
    std::vector<int64_t> all(context.size);
    MPI_Gather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, 0, context.comm);
    return all;
  };
  record.peak_bytes = gather(static_cast<int64_t>(trainer.device().peak_bytes()));
  record.estimated_bytes = gather(static_cast<int64_t>(context.estimated_bytes));
  // The resident high-water mark of the whole process (all it ever touched: the MPI library,
  // the BLAS's buffers, --verify's replay to come not yet), in kilobytes from the kernel.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  record.peak_rss_bytes = gather(static_cast<int64_t>(usage.ru_maxrss) * 1024);
  record.disk_bytes = gather(static_cast<int64_t>(context.disk_bytes));
  record.rank_nodes = gather(context.node);
  record.local_ranks = gather(context.local_rank);
}

}  // namespace mlps

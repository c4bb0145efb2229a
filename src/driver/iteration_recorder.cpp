#include "src/driver/iteration_recorder.h"

#include <mpi.h>

#include <sstream>

namespace mlps {

namespace {

struct CommColumn {
  CommKind kind = CommKind::all_reduce;
  int group_size = 1;
};

// Every rank's collective names (with kind and group size), merged and known to all ranks.
std::map<std::string, CommColumn> union_of_comm_names(
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
  std::map<std::string, CommColumn> columns;
  std::istringstream in(all);
  std::string name;
  int kind = 0, group_size = 0;
  while (in >> name >> kind >> group_size) {
    CommColumn& c = columns[name];
    c.kind = static_cast<CommKind>(kind);
    c.group_size = std::max(c.group_size, group_size);
  }
  return columns;
}

IterationRankTable empty_table(int64_t iterations, int ranks) {
  return {iterations, ranks, std::vector<double>(static_cast<size_t>(iterations * ranks))};
}

}  // namespace

void IterationRecorder::add(std::vector<double> timings, std::map<std::string, CommTotals> comm) {
  timings_.push_back(std::move(timings));
  comm_.push_back(std::move(comm));
}

void IterationRecorder::gather_into(const RunContext& context, RunRecord& record) const {
  const auto columns = union_of_comm_names(context, comm_);
  // Local matrix [iterations × values]: the timings, then bytes and seconds of each collective.
  const int64_t iterations = this->iterations();
  const auto per_iteration = static_cast<int64_t>(timing_names_.size() + 2 * columns.size());
  std::vector<double> local;
  local.reserve(static_cast<size_t>(iterations * per_iteration));
  for (int64_t i = 0; i < iterations; ++i) {
    local.insert(local.end(), timings_[i].begin(), timings_[i].end());
    for (const auto& [name, column] : columns) {
      const auto it = comm_[i].find(name);
      local.push_back(it == comm_[i].end() ? 0.0 : it->second.bytes);
      local.push_back(it == comm_[i].end() ? 0.0 : it->second.seconds);
    }
  }
  std::vector<double> all(context.is_root() ? local.size() * context.size : 0);
  MPI_Gather(local.data(), static_cast<int>(local.size()), MPI_DOUBLE, all.data(),
             static_cast<int>(local.size()), MPI_DOUBLE, 0, context.comm);
  if (!context.is_root()) return;
  auto value = [&](int64_t rank, int64_t iteration, int64_t column) {
    return all[static_cast<size_t>((rank * iterations + iteration) * per_iteration + column)];
  };
  auto fill = [&](IterationRankTable& table, int64_t column) {
    for (int64_t r = 0; r < context.size; ++r)
      for (int64_t i = 0; i < iterations; ++i)
        table.values[i * context.size + r] = value(r, i, column);
  };
  for (size_t t = 0; t < timing_names_.size(); ++t) {
    IterationRankTable table = empty_table(iterations, context.size);
    fill(table, static_cast<int64_t>(t));
    record.timing[timing_names_[t]] = std::move(table);
  }
  int64_t column = static_cast<int64_t>(timing_names_.size());
  for (const auto& [name, c] : columns) {
    CommRecord comm{empty_table(iterations, context.size), empty_table(iterations, context.size),
                    to_string(c.kind), c.group_size};
    fill(comm.bytes, column++);
    fill(comm.time_seconds, column++);
    record.comm[name] = std::move(comm);
  }
}

}  // namespace mlps

#include "src/driver/training_driver.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "src/data/shuffle.h"
#include "src/driver/console_report.h"
#include "src/driver/verification.h"
#include "src/errors.h"
#include "src/results/run_info.h"

namespace mlps {

std::string default_result_path(const std::string& scheme) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return "results/" + scheme + "-" + stamp + "-" + std::to_string(getpid()) + ".h5";
}

namespace {

// Rank 0 proves it can create the result file's directory and write there, before any training
// time is spent; every rank gets the same verdict, so a bad --out fails everywhere at once.
void check_output_writable(const RunContext& context, const std::string& path) {
  std::string problem;
  if (context.is_root()) {
    namespace fs = std::filesystem;
    const fs::path parent = fs::path(path).parent_path();
    std::error_code error;
    if (!parent.empty()) fs::create_directories(parent, error);
    const std::string probe = path + ".probe." + std::to_string(getpid());
    if (error) {
      problem = "--out " + path + ": cannot create " + parent.string() + " (" + error.message() + ")";
    } else if (!std::ofstream(probe)) {
      problem = "--out " + path + ": cannot write in " + (parent.empty() ? "." : parent.string());
    }
    fs::remove(probe, error);
  }
  int length = static_cast<int>(problem.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, context.comm);
  problem.resize(static_cast<size_t>(length));
  MPI_Bcast(problem.data(), length, MPI_CHAR, 0, context.comm);
  if (!problem.empty()) throw InputError(problem);
}

// What each rank records per iteration: the phases, then the time it was blocked on
// communication, then bytes, seconds and calls of every collective kind.
constexpr CommKind kCommKinds[] = {CommKind::all_reduce, CommKind::all_gather,
                                   CommKind::reduce_scatter, CommKind::broadcast,
                                   CommKind::send_recv};

std::vector<std::string> recorded_columns() {
  auto names = phase_names();
  names.push_back("exposed_comm");
  for (CommKind kind : kCommKinds)
    for (const char* what : {"bytes", "time", "calls"})
      names.push_back(std::string("comm:") + to_string(kind) + ":" + what);
  return names;
}

void append_iteration(std::vector<double>& local, const std::vector<double>& phase_seconds,
                      double blocked, const std::map<std::string, CommTotals>& comm) {
  local.insert(local.end(), phase_seconds.begin(), phase_seconds.end());
  local.push_back(blocked);
  for (CommKind kind : kCommKinds) {
    const auto it = comm.find(to_string(kind));
    const CommTotals totals = it == comm.end() ? CommTotals{} : it->second;
    local.push_back(totals.bytes);
    local.push_back(totals.seconds);
    local.push_back(static_cast<double>(totals.calls));
  }
}

// Every rank's [iterations × columns] records, gathered to rank 0 as one table per column.
std::map<std::string, IterationRankTable> gather_tables(const RunContext& context,
                                                        const std::vector<double>& local,
                                                        int64_t iterations) {
  const auto names = recorded_columns();
  const auto phases = static_cast<int64_t>(names.size());
  std::vector<double> all(context.is_root() ? local.size() * context.size : 0);
  MPI_Gather(local.data(), static_cast<int>(local.size()), MPI_DOUBLE, all.data(),
             static_cast<int>(local.size()), MPI_DOUBLE, 0, context.comm);
  std::map<std::string, IterationRankTable> tables;
  if (!context.is_root()) return tables;
  for (int64_t p = 0; p < phases; ++p) {
    IterationRankTable t{iterations, context.size, std::vector<double>(iterations * context.size)};
    for (int64_t r = 0; r < context.size; ++r)
      for (int64_t i = 0; i < iterations; ++i)
        t.values[i * context.size + r] = all[(r * iterations + i) * phases + p];
    tables[names[p]] = std::move(t);
  }
  return tables;
}

// Splits gathered tables into /timing phases and /comm kinds (kinds no rank used are left out).
void file_tables(std::map<std::string, IterationRankTable> tables, RunRecord& record) {
  for (CommKind kind : kCommKinds) {
    const std::string prefix = std::string("comm:") + to_string(kind) + ":";
    IterationRankTable calls = std::move(tables[prefix + "calls"]);
    IterationRankTable bytes = std::move(tables[prefix + "bytes"]);
    IterationRankTable time = std::move(tables[prefix + "time"]);
    tables.erase(prefix + "calls");
    tables.erase(prefix + "bytes");
    tables.erase(prefix + "time");
    bool used = false;
    for (double c : calls.values) used = used || c > 0;
    if (used) record.comm[to_string(kind)] = CommRecord{std::move(time), std::move(bytes)};
  }
  record.timing = std::move(tables);
}

std::vector<int64_t> gather_peak_bytes(const RunContext& context, size_t peak) {
  const auto mine = static_cast<int64_t>(peak);
  std::vector<int64_t> all(context.size);
  MPI_Gather(&mine, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, 0, context.comm);
  return all;
}

double evaluate(const Options& o, Trainer& trainer, const Dataset& dataset, int64_t samples) {
  int64_t correct = 0;
  for (int64_t first = 0; first < samples; first += o.batch) {
    const int64_t rows = std::min(o.batch, samples - first);
    const BatchSlice slice = trainer.batch_slice(rows);
    const HostBatch batch = load_batch_range(dataset, Split::test, first + slice.first, slice.count,
                                             static_cast<int>(o.model.image_size));
    correct += trainer.count_correct(batch, rows);
  }
  return static_cast<double>(correct) / static_cast<double>(samples);
}

}  // namespace

int run_training(const RunContext& context, const Options& o, const TrainingSchedule& schedule,
                 Trainer& trainer, const Dataset& dataset) {
  const std::string out_path = o.out.empty() ? default_result_path(trainer.scheme()) : o.out;
  check_output_writable(context, out_path);
  const std::string start_time = utc_timestamp_now();
  const int64_t eval_samples = o.eval_samples > 0
                                   ? std::min(o.eval_samples, dataset.size(Split::test))
                                   : dataset.size(Split::test);
  const std::string device_name = to_string(trainer.device().kind());
  if (context.is_root())
    print_settings_header(context, o, schedule, trainer.scheme(), trainer.grid(), device_name,
                          dataset.describe(), trainer.parameter_count(), out_path);

  PhaseTimer timer(trainer.device());
  std::vector<double> local_times;
  local_times.reserve(schedule.iterations * recorded_columns().size());
  RunRecord record;
  std::vector<int64_t> order;
  for (int64_t it = 0; it < schedule.iterations; ++it) {
    timer.begin_iteration();
    HostBatch batch;
    {
      ScopedPhase phase(timer, Phase::data);
      if (it == 0 || schedule.first_position(it) == 0)
        order = epoch_order(schedule.train_samples, o.seed, schedule.epoch_of(it));
      const BatchSlice slice = trainer.batch_slice(schedule.global_batch);
      batch = load_batch(dataset, Split::train, order, schedule.first_position(it) + slice.first,
                         slice.count, static_cast<int>(o.model.image_size));
    }
    const double loss = trainer.train_step(batch, schedule.global_batch, timer);
    const std::vector<double> seconds = timer.end_iteration();
    append_iteration(local_times, seconds, trainer.take_blocked_comm_seconds(),
                     trainer.take_comm_totals());
    record.loss.push_back(loss);
    if (context.is_root() && o.print_every > 0 &&
        ((it + 1) % o.print_every == 0 || it + 1 == schedule.iterations || !std::isfinite(loss)))
      print_progress(it, schedule, loss, seconds[0]);
    if (schedule.ends_epoch(it)) {
      const double accuracy = evaluate(o, trainer, dataset, eval_samples);
      record.test_accuracy.push_back(accuracy);
      if (context.is_root()) print_evaluation(schedule.epoch_of(it), accuracy, eval_samples);
    }
  }

  auto tables = gather_tables(context, local_times, schedule.iterations);
  if (context.is_root()) file_tables(std::move(tables), record);
  record.peak_bytes = gather_peak_bytes(context, trainer.device().peak_bytes());
  const std::string hosts = host_names(context.comm);
  std::vector<NamedTensor> parameters;
  if (o.verify) parameters = trainer.gather_parameters();

  int exit_code = 0;
  if (context.is_root()) {
    auto& s = record.string_attributes;
    s["scheme"] = trainer.scheme();
    s["grid"] = trainer.grid();
    s["device"] = device_name;
    s["comm"] = trainer.comm_backend();
    s["precision"] = to_string(o.precision);
    s["data"] = dataset.describe();
    s["config_json"] = o.resolved_json;
    s["command_line"] = context.command_line;
    s["git_commit"] = git_commit();
    s["mpi_version"] = mpi_library_version();
    s["nccl_version"] = nccl_version();
    s["cuda_version"] = cuda_version();
    s["hdf5_version"] = hdf5_library_version();
    s["hosts"] = hosts;
    s["start_time"] = start_time;
    auto& n = record.integer_attributes;
    n["world_size"] = context.size;
    n["warmup_iterations"] = o.warmup;
    n["iterations"] = schedule.iterations;
    n["parameters"] = trainer.parameter_count();
    n["global_batch"] = schedule.global_batch;
    print_summary(record, schedule, o.warmup, trainer.parameter_count());
    if (o.verify) {
      std::printf("verify: recomputing %lld iterations serially in fp64 on the CPU ...\n",
                  (long long)schedule.iterations);
      std::fflush(stdout);
      record.verification = verify_against_serial(o, dataset, schedule, record.loss, parameters);
      std::printf("verify: %s  worst relative error %.3e (%s), tolerance %.1e (losses and "
                  "final weights vs serial fp64)\n",
                  record.verification.verdict.c_str(), record.verification.max_relative_error,
                  record.verification.worst_at.c_str(), record.verification.tolerance);
      if (record.verification.verdict != "PASS") exit_code = 3;
    }
    write_results_hdf5(out_path, record);
    std::printf("results: %s\n", out_path.c_str());
  }
  MPI_Bcast(&exit_code, 1, MPI_INT, 0, context.comm);
  return exit_code;
}

}  // namespace mlps

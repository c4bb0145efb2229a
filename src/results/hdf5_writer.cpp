// write_results_hdf5: one result file per run, laid out as results/README.md documents, built in
// memory and published whole (hdf5::write_file_atomically), so readers never see a partial one.
#include <stdexcept>
#include <string>
#include <string_view>

#include "src/results/hdf5_write.h"
#include "src/results/run_record.h"
#include "src/results/schema.h"

namespace mlps {
namespace {

using namespace hdf5;  // this file writes through the HDF5 helpers only

void write_table(hid_t parent, const std::string& name, const IterationRankTable& table,
                 std::string_view units) {
  write_dataset(parent, name, table.values, units,
                {static_cast<hsize_t>(table.iterations), static_cast<hsize_t>(table.ranks)});
}

// Attributes written to the file itself are the root group's.
void write_root_attributes(hid_t file, const RunRecord& record) {
  for (const auto& [name, value] : record.string_attributes) write_attribute(file, name, value);
  for (const auto& [name, value] : record.integer_attributes) write_attribute(file, name, value);
  write_attribute(file, std::string(result_schema::kVersionAttribute), result_schema::kVersion);
}

void write_timing(hid_t file, const RunRecord& record) {
  Handle group = create_group(file, "timing");
  for (const auto& [phase, table] : record.timing)
    write_table(group.get(), phase, table, result_schema::kSecondsUnits);
}

// Optional: a file without /counters predates them.
void write_counters(hid_t file, const RunRecord& record) {
  if (record.counters.empty()) return;
  Handle group = create_group(file, "counters");
  for (const auto& [name, table] : record.counters)
    write_table(group.get(), name, table, result_schema::kCountUnits);
}

void write_comm(hid_t file, const RunRecord& record) {
  Handle group = create_group(file, "comm");
  for (const auto& [kind, comm] : record.comm) {
    Handle kind_group = create_group(group.get(), kind);
    write_attribute(kind_group.get(), "kind", comm.kind);
    write_attribute(kind_group.get(), "group_size", comm.group_size);
    write_table(kind_group.get(), "time", comm.time_seconds, result_schema::kSecondsUnits);
    write_table(kind_group.get(), "bytes", comm.bytes, result_schema::kBytesUnits);
  }
}

void write_train(hid_t file, const RunRecord& record) {
  Handle group = create_group(file, "train");
  write_dataset(group.get(), "loss", record.loss);
  write_dataset(group.get(), "test_accuracy", record.test_accuracy);
  write_dataset(group.get(), "loss_scale", record.loss_scale);
}

void write_memory(hid_t file, const RunRecord& record) {
  Handle group = create_group(file, "memory");
  write_dataset(group.get(), "peak_bytes", record.peak_bytes);
  if (!record.estimated_bytes.empty())
    write_dataset(group.get(), "estimated_bytes", record.estimated_bytes);
  if (!record.peak_rss_bytes.empty())
    write_dataset(group.get(), "peak_rss_bytes", record.peak_rss_bytes);
  if (!record.disk_bytes.empty()) write_dataset(group.get(), "disk_bytes", record.disk_bytes);
}

void write_placement(hid_t file, const RunRecord& record) {
  if (record.rank_nodes.empty()) return;  // a record made without a run (tests)
  Handle group = create_group(file, "placement");
  for (const auto& [name, values] :
       {std::pair{"node", &record.rank_nodes}, std::pair{"local_rank", &record.local_ranks}})
    write_dataset(group.get(), name, *values);
}

void write_verification(hid_t file, const Verification& verification) {
  Handle group = create_group(file, "verification");
  write_attribute(group.get(), "verdict", verification.verdict);
  write_attribute(group.get(), "max_relative_error", verification.max_relative_error);
  write_attribute(group.get(), "tolerance", verification.tolerance);
  write_attribute(group.get(), "worst_at", verification.worst_at);
  write_attribute(group.get(), "serial_fp32_error", verification.serial_fp32_error);
}

void write_prediction(hid_t file, const RecordedPrediction& prediction) {
  if (prediction.machine.empty()) return;
  Handle group = create_group(file, "prediction");
  write_attribute(group.get(), "machine", prediction.machine);
  write_attribute(group.get(), "machine_file", prediction.machine_file);
  write_attribute(group.get(), "oversubscribed", int64_t{prediction.oversubscribed ? 1 : 0});
  for (const auto& [name, value] : prediction.figures) write_attribute(group.get(), name, value);
}

}  // namespace

void write_results_hdf5(const std::string& path, const RunRecord& record) {
  try {
    validate_run_record(record, path);
  } catch (const std::exception& error) {
    throw std::runtime_error("cannot write " + std::string(error.what()));
  }
  hdf5::write_file_atomically(path, [&record](hid_t file) {
    write_root_attributes(file, record);
    write_timing(file, record);
    write_counters(file, record);
    write_comm(file, record);
    write_train(file, record);
    write_memory(file, record);
    write_placement(file, record);
    write_verification(file, record.verification);
    write_prediction(file, record.prediction);
  });
}

}  // namespace mlps

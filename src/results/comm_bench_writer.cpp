// write_comm_bench_hdf5: bin/bench_comm's sweep file, published by hdf5::write_file_atomically.
#include "src/results/comm_bench_writer.h"

#include <stdexcept>

#include "src/results/hdf5_write.h"

namespace mlps {
namespace {

using namespace hdf5;  // this file writes through the HDF5 helpers only

void check_lengths(const CommBenchSweep& sweep, const std::string& path) {
  const size_t n = sweep.bytes.size();
  if (sweep.count.size() != n || sweep.time_seconds.size() != n || sweep.algbw.size() != n ||
      sweep.busbw.size() != n || sweep.wrong.size() != n)
    throw std::runtime_error("cannot write " + path + ": sweep '" + sweep.op +
                             "' has vectors of different lengths");
  if (sweep.op.empty() || sweep.op.find('/') != std::string::npos)
    throw std::runtime_error("cannot write " + path + ": '" + sweep.op +
                             "' is not a valid group name");
}

void write_sweep(hid_t file, const CommBenchSweep& sweep) {
  Handle group = create_group(file, sweep.op);
  write_dataset(group.get(), "bytes", sweep.bytes, "bytes");
  write_dataset(group.get(), "count", sweep.count, "elements");
  write_dataset(group.get(), "time_seconds", sweep.time_seconds, "seconds");
  write_dataset(group.get(), "algbw", sweep.algbw, "GB/s");
  write_dataset(group.get(), "busbw", sweep.busbw, "GB/s");
  write_dataset(group.get(), "wrong", sweep.wrong, "elements");
}

// Attributes written to the file itself are the root group's.
void write_contents(hid_t file, const CommBenchRecord& record) {
  for (const auto& [name, value] : record.string_attributes) write_attribute(file, name, value);
  for (const auto& [name, value] : record.integer_attributes) write_attribute(file, name, value);
  for (const auto& [name, value] : record.real_attributes) write_attribute(file, name, value);
  write_attribute(file, "kind", "bench_comm");
  for (const CommBenchSweep& sweep : record.sweeps) write_sweep(file, sweep);
}

}  // namespace

void write_comm_bench_hdf5(const std::string& path, const CommBenchRecord& record) {
  for (const CommBenchSweep& sweep : record.sweeps) check_lengths(sweep, path);
  if (record.string_attributes.count("kind") != 0)
    throw std::runtime_error("cannot write " + path + ": attribute kind is the writer's own");
  hdf5::write_file_atomically(path, [&record](hid_t file) { write_contents(file, record); });
}

}  // namespace mlps

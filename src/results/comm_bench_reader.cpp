// read_comm_bench_hdf5: bin/bench_comm's sweep file read back, for bin/plan --calibrate.
#include <filesystem>
#include <type_traits>
#include <vector>

#include "src/base/errors.h"
#include "src/results/comm_bench_writer.h"
#include "src/results/hdf5_handle.h"

namespace mlps {
namespace {

using hdf5::Handle;

class CommBenchReader {
 public:
  explicit CommBenchReader(const std::string& path) : path_(path) {
    hdf5::silence_errors();
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error))
      fail("cannot read a file there (run bin/bench_comm --out " + path + " first)");
    file_ = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (file_.get() < 0) fail("not an HDF5 file" + hdf5::error_detail());
    if (string_attribute("kind") != "bench_comm") fail("not a bin/bench_comm file");
  }

  std::string string_attribute(const std::string& name) const {
    Handle a = open_attribute(name);
    Handle type(H5Aget_type(a.get()), H5Tclose);
    std::string text;
    if (H5Tget_class(type.get()) != H5T_STRING ||
        !hdf5::read_text_attribute(a.get(), type.get(), text))
      fail("cannot read attribute " + name + " as text");
    return text;
  }
  int64_t integer_attribute(const std::string& name) const {
    Handle a = open_attribute(name);
    int64_t value = 0;
    if (H5Aread(a.get(), H5T_NATIVE_INT64, &value) < 0) fail("cannot read attribute " + name);
    return value;
  }
  bool has_attribute(const std::string& name) const {
    return H5Aexists(file_.get(), name.c_str()) > 0;
  }
  bool has_group(const std::string& name) const {
    return H5Lexists(file_.get(), name.c_str(), H5P_DEFAULT) > 0;
  }
  template <typename T>
  std::vector<T> dataset(const std::string& group, const std::string& name) const {
    const std::string where = group + "/" + name;
    Handle d(H5Dopen2(file_.get(), where.c_str(), H5P_DEFAULT), H5Dclose);
    if (d.get() < 0) fail("no dataset " + where);
    Handle space(H5Dget_space(d.get()), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    std::vector<T> values(static_cast<size_t>(n > 0 ? n : 0));
    const hid_t type = std::is_same_v<T, int64_t> ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
    if (n > 0 && H5Dread(d.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
      fail("cannot read " + where);
    return values;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(path_ + ": " + what);
  }

 private:
  Handle open_attribute(const std::string& name) const {
    if (!has_attribute(name)) fail("no attribute " + name);
    return Handle(H5Aopen(file_.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
  }
  std::string path_;
  Handle file_;
};

}  // namespace

CommBenchRecord read_comm_bench_hdf5(const std::string& path) {
  const CommBenchReader in(path);
  CommBenchRecord record;
  for (const char* name : {"backend", "device", "hosts"})
    record.string_attributes[name] = in.string_attribute(name);
  record.integer_attributes["ranks"] = in.integer_attribute("ranks");
  // Files from before --evict-bytes timed their calls in a row.
  record.integer_attributes["evict_bytes"] =
      in.has_attribute("evict_bytes") ? in.integer_attribute("evict_bytes") : 0;
  for (const char* op : {"allreduce", "allgather", "reduce_scatter", "broadcast", "sendrecv"}) {
    if (!in.has_group(op)) continue;
    CommBenchSweep sweep;
    sweep.op = op;
    sweep.bytes = in.dataset<int64_t>(op, "bytes");
    sweep.time_seconds = in.dataset<double>(op, "time_seconds");
    sweep.busbw = in.dataset<double>(op, "busbw");
    if (sweep.bytes.empty() || sweep.time_seconds.size() != sweep.bytes.size() ||
        sweep.busbw.size() != sweep.bytes.size())
      in.fail(std::string("sweep ") + op + " is empty or its datasets differ in length");
    record.sweeps.push_back(std::move(sweep));
  }
  if (record.sweeps.empty()) in.fail("no collective sweep");
  return record;
}

}  // namespace mlps

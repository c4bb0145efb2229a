// write_comm_bench_hdf5: bin/bench_comm's sweep file, atomically (temporary name, then rename), as
// write_results_hdf5 does for training runs.
#include "src/results/comm_bench_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include "src/results/hdf5_handle.h"

namespace mlps {
namespace {

using hdf5::Handle;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + hdf5::error_detail());
}

Handle checked(hid_t id, Handle::Closer closer, const std::string& what) {
  if (id < 0) fail(what);
  return Handle(id, closer);
}

void check(herr_t status, const std::string& what) {
  if (status < 0) fail(what);
}

void write_scalar_attribute(hid_t object, const std::string& name, hid_t file_type,
                            hid_t memory_type, const void* value, const std::string& where) {
  const std::string what = "attribute " + name + " of " + where;
  Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, "cannot make a dataspace for " + what);
  Handle attribute =
      checked(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose, "cannot create " + what);
  check(H5Awrite(attribute.get(), memory_type, value), "cannot write " + what);
}

// Variable-length UTF-8, which h5py reads back as a Python str (as in the training files).
void write_string_attribute(hid_t object, const std::string& name, const std::string& value,
                            const std::string& where) {
  Handle type = checked(H5Tcopy(H5T_C_S1), H5Tclose, "cannot make a string type");
  check(H5Tset_size(type.get(), H5T_VARIABLE), "cannot make a string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "cannot make a string type");
  const char* text = value.c_str();
  write_scalar_attribute(object, name, type.get(), type.get(), &text, where);
}

template <typename T>
void write_vector(hid_t group, const std::string& name, const std::vector<T>& values,
                  const std::string& units, const std::string& where) {
  const bool integer = std::is_integral_v<T>;
  const hid_t file_type = integer ? H5T_STD_I64LE : H5T_IEEE_F64LE;
  const hid_t memory_type = integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
  const hsize_t dims[1] = {values.size()};
  Handle space = checked(H5Screate_simple(1, dims, nullptr), H5Sclose,
                         "cannot make a dataspace for " + where);
  Handle dataset = checked(H5Dcreate2(group, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                      H5P_DEFAULT, H5P_DEFAULT),
                           H5Dclose, "cannot create dataset " + where);
  if (!values.empty())
    check(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
          "cannot write dataset " + where);
  if (!units.empty()) write_string_attribute(dataset.get(), "units", units, where);
}

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
  const std::string where = "/" + sweep.op;
  Handle group = checked(H5Gcreate2(file, sweep.op.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                         H5Gclose, "cannot create group " + where);
  write_vector(group.get(), "bytes", sweep.bytes, "bytes", where + "/bytes");
  write_vector(group.get(), "count", sweep.count, "elements", where + "/count");
  write_vector(group.get(), "time_seconds", sweep.time_seconds, "seconds",
               where + "/time_seconds");
  write_vector(group.get(), "algbw", sweep.algbw, "GB/s", where + "/algbw");
  write_vector(group.get(), "busbw", sweep.busbw, "GB/s", where + "/busbw");
  write_vector(group.get(), "wrong", sweep.wrong, "elements", where + "/wrong");
}

void write_file(const std::string& file_path, const CommBenchRecord& record) {
  Handle file = checked(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                        H5Fclose, "cannot create " + file_path);
  Handle root = checked(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose,
                        "cannot open the root group");
  for (const auto& [name, value] : record.string_attributes)
    write_string_attribute(root.get(), name, value, "/");
  for (const auto& [name, value] : record.integer_attributes)
    write_scalar_attribute(root.get(), name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, "/");
  for (const auto& [name, value] : record.real_attributes)
    write_scalar_attribute(root.get(), name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, "/");
  write_string_attribute(root.get(), "kind", "bench_comm", "/");
  root.close();
  for (const CommBenchSweep& sweep : record.sweeps) write_sweep(file.get(), sweep);
  if (!file.close()) fail("cannot close " + file_path);
}

}  // namespace

void write_comm_bench_hdf5(const std::string& path, const CommBenchRecord& record) {
  for (const CommBenchSweep& sweep : record.sweeps) check_lengths(sweep, path);
  if (record.string_attributes.count("kind") != 0)
    throw std::runtime_error("cannot write " + path + ": attribute kind is the writer's own");
  hdf5::silence_errors();
  const std::string prefix = "cannot write " + path + ": ";

  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code error;
    std::filesystem::create_directories(parent, error);
    if (error)
      throw std::runtime_error(prefix + "cannot create directory " + parent.string() + " (" +
                               error.message() + ")");
  }

  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  try {
    write_file(temporary, record);
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
      throw std::runtime_error("cannot rename " + temporary + " to " + path + " (" +
                               std::generic_category().message(errno) + ")");
  } catch (const std::exception& error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw std::runtime_error(prefix + error.what());
  }
}

}  // namespace mlps

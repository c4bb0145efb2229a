// write_results_hdf5: one result file per run, laid out as results/README.md documents. The file
// is written under "<path>.tmp.<pid>" and renamed into place, so readers never see a partial one.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "src/results/hdf5_handle.h"
#include "src/results/run_record.h"
#include "src/results/schema.h"

namespace mlps {
namespace {

using hdf5::Handle;

// Failures inside the file carry what was being written; write_results_hdf5 adds the path.
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

Handle create_group(hid_t parent, const std::string& name, const std::string& where) {
  return checked(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 H5Gclose, "cannot create group " + where);
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

// Variable-length UTF-8, which h5py reads back as a Python str.
void write_string_attribute(hid_t object, const std::string& name, const std::string& value,
                            const std::string& where) {
  Handle type = checked(H5Tcopy(H5T_C_S1), H5Tclose, "cannot make a string type");
  check(H5Tset_size(type.get(), H5T_VARIABLE), "cannot make a string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "cannot make a string type");
  const char* text = value.c_str();
  write_scalar_attribute(object, name, type.get(), type.get(), &text, where);
}

void write_int64_attribute(hid_t object, const std::string& name, int64_t value,
                           const std::string& where) {
  write_scalar_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, where);
}

void write_double_attribute(hid_t object, const std::string& name, double value,
                            const std::string& where) {
  write_scalar_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, where);
}

// A contiguous dataset of fixed shape; a zero-length one is a simple dataspace of extent 0,
// which h5py reads as an empty array (a null dataspace would read as h5py.Empty instead).
void write_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims,
                   hid_t file_type, hid_t memory_type, const void* data, const std::string& where,
                   std::string_view units = {}) {
  Handle space =
      checked(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
              "cannot make a dataspace for " + where);
  Handle dataset = checked(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                      H5P_DEFAULT, H5P_DEFAULT),
                           H5Dclose, "cannot create dataset " + where);
  hsize_t elements = 1;
  for (hsize_t d : dims) elements *= d;
  if (elements > 0)
    check(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
          "cannot write dataset " + where);
  if (!units.empty()) write_string_attribute(dataset.get(), "units", std::string(units), where);
}

void write_table(hid_t parent, const std::string& name, const IterationRankTable& table,
                 std::string_view units, const std::string& where) {
  const std::vector<hsize_t> dims = {static_cast<hsize_t>(table.iterations),
                                     static_cast<hsize_t>(table.ranks)};
  write_dataset(parent, name, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, table.values.data(), where,
                units);
}

void write_vector(hid_t parent, const std::string& name, const std::vector<double>& values,
                  const std::string& where) {
  write_dataset(parent, name, {values.size()}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.data(),
                where);
}

void write_root_attributes(hid_t file, const RunRecord& record) {
  Handle root = checked(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
  for (const auto& [name, value] : record.string_attributes)
    write_string_attribute(root.get(), name, value, "/");
  for (const auto& [name, value] : record.integer_attributes)
    write_int64_attribute(root.get(), name, value, "/");
  write_int64_attribute(root.get(), std::string(result_schema::kVersionAttribute),
                        result_schema::kVersion, "/");
}

void write_timing(hid_t file, const RunRecord& record) {
  Handle group = create_group(file, "timing", "/timing");
  for (const auto& [phase, table] : record.timing)
    write_table(group.get(), phase, table, result_schema::kSecondsUnits, "/timing/" + phase);
}

void write_comm(hid_t file, const RunRecord& record) {
  Handle group = create_group(file, "comm", "/comm");
  for (const auto& [kind, comm] : record.comm) {
    const std::string where = "/comm/" + kind;
    Handle kind_group = create_group(group.get(), kind, where);
    write_string_attribute(kind_group.get(), "kind", comm.kind, where);
    write_int64_attribute(kind_group.get(), "group_size", comm.group_size, where);
    write_table(kind_group.get(), "time", comm.time_seconds, result_schema::kSecondsUnits,
                where + "/time");
    write_table(kind_group.get(), "bytes", comm.bytes, result_schema::kBytesUnits,
                where + "/bytes");
  }
}

void write_train(hid_t file, const RunRecord& record) {
  Handle group = create_group(file, "train", "/train");
  write_vector(group.get(), "loss", record.loss, "/train/loss");
  write_vector(group.get(), "test_accuracy", record.test_accuracy, "/train/test_accuracy");
}

void write_memory(hid_t file, const RunRecord& record) {
  Handle group = create_group(file, "memory", "/memory");
  write_dataset(group.get(), "peak_bytes", {record.peak_bytes.size()}, H5T_STD_I64LE,
                H5T_NATIVE_INT64, record.peak_bytes.data(), "/memory/peak_bytes");
}

void write_verification(hid_t file, const Verification& verification) {
  Handle group = create_group(file, "verification", "/verification");
  write_string_attribute(group.get(), "verdict", verification.verdict, "/verification");
  write_double_attribute(group.get(), "max_relative_error", verification.max_relative_error,
                         "/verification");
  write_double_attribute(group.get(), "tolerance", verification.tolerance, "/verification");
  write_string_attribute(group.get(), "worst_at", verification.worst_at, "/verification");
}

void write_file(const std::string& file_path, const RunRecord& record) {
  Handle file = checked(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                        H5Fclose, "cannot create " + file_path);
  write_root_attributes(file.get(), record);
  write_timing(file.get(), record);
  write_comm(file.get(), record);
  write_train(file.get(), record);
  write_memory(file.get(), record);
  write_verification(file.get(), record.verification);
  if (!file.close()) fail("cannot close " + file_path);
}

}  // namespace

void write_results_hdf5(const std::string& path, const RunRecord& record) {
  const std::string prefix = "cannot write " + path + ": ";
  try {
    validate_run_record(record, path);
  } catch (const std::exception& error) {
    throw std::runtime_error("cannot write " + std::string(error.what()));
  }
  hdf5::silence_errors();

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

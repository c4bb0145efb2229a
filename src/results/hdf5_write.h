#pragma once
// The HDF5 writing helpers the result files share (training runs and bin/bench_comm sweeps):
// checked creation, scalar attributes, contiguous datasets with units, and whole-file atomic
// writes. Failures throw std::runtime_error naming what was being written ("where", an HDF5 path)
// followed by HDF5's most specific message.
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/results/hdf5_handle.h"

namespace mlps::hdf5 {

// Throws std::runtime_error(what + error_detail()).
[[noreturn]] void fail(const std::string& what);

// `id` as an owning Handle; fails with `what` when it is an HDF5 error (negative).
Handle checked(hid_t id, Handle::Closer closer, const std::string& what);

// Fails with `what` when `status` is an HDF5 error (negative).
void check(herr_t status, const std::string& what);

Handle create_group(hid_t parent, const std::string& name, const std::string& where);

void write_scalar_attribute(hid_t object, const std::string& name, hid_t file_type,
                            hid_t memory_type, const void* value, const std::string& where);

// Variable-length UTF-8, which h5py reads back as a Python str.
void write_string_attribute(hid_t object, const std::string& name, const std::string& value,
                            const std::string& where);

// Stored as little-endian int64 and float64 whatever the host.
void write_int64_attribute(hid_t object, const std::string& name, int64_t value,
                           const std::string& where);
void write_double_attribute(hid_t object, const std::string& name, double value,
                            const std::string& where);

// A contiguous dataset of fixed shape, with a string attribute "units" unless `units` is empty.
// A zero-length one is a simple dataspace of extent 0, which h5py reads as an empty array.
void write_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims,
                   hid_t file_type, hid_t memory_type, const void* data, const std::string& where,
                   std::string_view units = {});

// One-dimensional datasets: little-endian float64 and int64.
void write_vector(hid_t parent, const std::string& name, const std::vector<double>& values,
                  const std::string& where, std::string_view units = {});
void write_vector(hid_t parent, const std::string& name, const std::vector<int64_t>& values,
                  const std::string& where, std::string_view units = {});

// Has `fill` write the file in memory, creates `path`'s parent directories and publishes the
// image (publish_file): readers never see a partial file, and a process killed at any point
// leaves none. Failures throw std::runtime_error "cannot write <path>: <what failed>".
void write_file_atomically(const std::string& path, const std::function<void(hid_t file)>& fill);

}  // namespace mlps::hdf5

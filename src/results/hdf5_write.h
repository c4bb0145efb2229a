#pragma once
// The HDF5 writing helpers the result files share (training runs and bin/bench_comm sweeps):
// checked creation, scalar attributes, contiguous datasets with units, and whole-file atomic
// writes. Failures throw std::runtime_error naming what was being written (by its HDF5 path)
// followed by HDF5's most specific message.
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/results/hdf5_handle.h"

namespace mlps::hdf5 {

Handle create_group(hid_t parent, const std::string& name);

// Strings as variable-length UTF-8, which h5py reads back as a Python str; numbers as
// little-endian int64 and float64 whatever the host.
void write_attribute(hid_t object, const std::string& name, const std::string& value);
void write_attribute(hid_t object, const std::string& name, int64_t value);
void write_attribute(hid_t object, const std::string& name, double value);

// A contiguous dataset of little-endian float64 or int64 (T: double or int64_t) of shape `dims`
// (none: one dimension of values.size()), with a string attribute "units" unless `units` is
// empty. A zero-length one is a simple dataspace of extent 0, which h5py reads as an empty array.
template <class T>
void write_dataset(hid_t parent, const std::string& name, const std::vector<T>& values,
                   std::string_view units = {}, std::vector<hsize_t> dims = {});

// Has `fill` write the file in memory, creates `path`'s parent directories and publishes the
// image (publish_file): readers never see a partial file, and a process killed at any point
// leaves none. Failures throw std::runtime_error "cannot write <path>: <what failed>".
void write_file_atomically(const std::string& path, const std::function<void(hid_t file)>& fill);

}  // namespace mlps::hdf5

#include "src/results/hdf5_write.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <vector>

#include "src/base/errors.h"
#include "src/base/publish_file.h"

namespace mlps::hdf5 {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what + error_detail()); }

// `id` as an owning Handle; fails with `what` when it is an HDF5 error (negative).
Handle checked(hid_t id, Handle::Closer closer, const std::string& what) {
  if (id < 0) fail(what);
  return Handle(id, closer);
}

void check(herr_t status, const std::string& what) {
  if (status < 0) fail(what);
}

// The HDF5 path of `name` in `parent` ("/" for the file itself), for messages. Taken before
// the call it describes: every HDF5 call clears the error stack that error_detail reads.
std::string path_of(hid_t parent, const std::string& name = {}) {
  const ssize_t length = H5Iget_name(parent, nullptr, 0);
  std::string path(static_cast<size_t>(std::max<ssize_t>(length, 0)), '\0');
  H5Iget_name(parent, path.data(), path.size() + 1);
  if (name.empty()) return path;
  return (path == "/" ? path : path + "/") + name;
}

void write_scalar_attribute(hid_t object, const std::string& name, hid_t file_type,
                            hid_t memory_type, const void* value) {
  const std::string what = "attribute " + name + " of " + path_of(object);
  Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, "cannot make a dataspace for " + what);
  Handle attribute =
      checked(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose, "cannot create " + what);
  check(H5Awrite(attribute.get(), memory_type, value), "cannot write " + what);
}

// The whole file built in memory (HDF5's core driver, no backing store) and returned as its
// image: HDF5 itself never touches the disk, so a full disk cannot fail inside libhdf5 (which
// in 1.10 could then crash at exit), and nothing is on disk until the image is published.
std::vector<char> file_image(const std::function<void(hid_t file)>& fill) {
  Handle access = checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "cannot make file properties");
  check(H5Pset_fapl_core(access.get(), size_t{1} << 20, 0), "cannot select the in-memory driver");
  Handle file = checked(H5Fcreate("mlpscale-result-in-memory", H5F_ACC_TRUNC, H5P_DEFAULT,
                                  access.get()),
                        H5Fclose, "cannot create the file in memory");
  fill(file.get());
  check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), "cannot flush the file in memory");
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  if (size < 0) fail("cannot size the file image");
  std::vector<char> image(static_cast<size_t>(size));
  if (H5Fget_file_image(file.get(), image.data(), image.size()) != size)
    fail("cannot copy the file image");
  if (!file.close()) fail("cannot close the file in memory");
  return image;
}

}  // namespace

Handle create_group(hid_t parent, const std::string& name) {
  const std::string where = path_of(parent, name);
  return checked(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 H5Gclose, "cannot create group " + where);
}

void write_attribute(hid_t object, const std::string& name, const std::string& value) {
  Handle type = checked(H5Tcopy(H5T_C_S1), H5Tclose, "cannot make a string type");
  check(H5Tset_size(type.get(), H5T_VARIABLE), "cannot make a string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "cannot make a string type");
  const char* text = value.c_str();
  write_scalar_attribute(object, name, type.get(), type.get(), &text);
}

void write_attribute(hid_t object, const std::string& name, int64_t value) {
  write_scalar_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void write_attribute(hid_t object, const std::string& name, double value) {
  write_scalar_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

template <class T>
void write_dataset(hid_t parent, const std::string& name, const std::vector<T>& values,
                   std::string_view units, std::vector<hsize_t> dims) {
  constexpr bool integer = std::is_same_v<T, int64_t>;
  const hid_t file_type = integer ? H5T_STD_I64LE : H5T_IEEE_F64LE;
  const hid_t memory_type = integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
  const std::string where = path_of(parent, name);
  if (dims.empty()) dims = {values.size()};
  Handle space =
      checked(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
              "cannot make a dataspace for " + where);
  Handle dataset = checked(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                      H5P_DEFAULT, H5P_DEFAULT),
                           H5Dclose, "cannot create dataset " + where);
  if (!values.empty())
    check(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
          "cannot write dataset " + where);
  if (!units.empty()) write_attribute(dataset.get(), "units", std::string(units));
}

template void write_dataset(hid_t, const std::string&, const std::vector<double>&,
                            std::string_view, std::vector<hsize_t>);
template void write_dataset(hid_t, const std::string&, const std::vector<int64_t>&,
                            std::string_view, std::vector<hsize_t>);

void write_file_atomically(const std::string& path, const std::function<void(hid_t file)>& fill) {
  silence_errors();
  const std::string prefix = "cannot write " + path + ": ";
  try {
    const std::vector<char> image = file_image(fill);
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) {
      std::error_code error;
      std::filesystem::create_directories(parent, error);
      if (error)
        throw OutputError("cannot create directory " + parent.string() + " (" +
                          error.message() + ")");
    }
    publish_file(path, image);
  } catch (const OutputError& error) {
    throw OutputError(prefix + error.what());
  } catch (const std::exception& error) {
    throw std::runtime_error(prefix + error.what());
  }
}

}  // namespace mlps::hdf5

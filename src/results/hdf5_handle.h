#pragma once
// Owning wrapper for HDF5 identifiers and the error helpers the result writer and reader share:
// every early return or exception closes what was opened, and HDF5's own error printing is
// replaced by one message per failure.
#include <hdf5.h>

#include <string>
#include <utility>

namespace mlps::hdf5 {

class Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  Handle& operator=(Handle&& other) noexcept {  // `other` closes what this held
    std::swap(id_, other.id_);
    std::swap(closer_, other.closer_);
    return *this;
  }
  ~Handle() { close(); }

  hid_t get() const { return id_; }

  // Closes now; false when HDF5 refused (for a file, closing is where the data is flushed).
  bool close() { return id_ < 0 || closer_(std::exchange(id_, H5I_INVALID_HID)) >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// HDF5 prints its whole error stack to stderr by default; we report failures ourselves.
inline void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// The most specific message on HDF5's current error stack (e.g. the errno text of a failed
// open) as " (message)", or "" when the stack is empty.
inline std::string error_detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
        if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
        return 0;
      },
      &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail.empty() ? detail : " (" + detail + ")";
}

// A string attribute's text, variable-length (as h5py and this project write) or fixed-length;
// false when HDF5 cannot read it (the caller has checked that `file_type` is a string type).
inline bool read_text_attribute(hid_t attribute, hid_t file_type, std::string& value) {
  if (H5Tis_variable_str(file_type) > 0) {
    Handle memory_type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory_type.get(), H5T_VARIABLE);
    H5Tset_cset(memory_type.get(), H5Tget_cset(file_type));
    char* text = nullptr;
    if (H5Aread(attribute, memory_type.get(), &text) < 0) return false;
    value = text != nullptr ? text : "";
    H5free_memory(text);
    return true;
  }
  value.assign(H5Tget_size(file_type), '\0');
  if (H5Aread(attribute, file_type, value.data()) < 0) return false;
  if (H5Tget_strpad(file_type) == H5T_STR_SPACEPAD)
    value.erase(value.find_last_not_of(' ') + 1);
  else
    value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return true;
}

}  // namespace mlps::hdf5

// read_results_hdf5: loads a result file back into a RunRecord and checks it against the schema
// (results/README.md), naming the file and the first field that is absent or mis-shaped.
#include <filesystem>
#include <functional>
#include <numeric>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "src/base/errors.h"
#include "src/results/hdf5_handle.h"
#include "src/results/run_record.h"
#include "src/results/schema.h"

namespace mlps {
namespace {

using hdf5::Handle;

// The HDF5 class, memory type and name of the numbers the schema holds.
template <class T>
struct Number {
  static constexpr bool integer = std::is_same_v<T, int64_t>;
  static constexpr H5T_class_t type_class = integer ? H5T_INTEGER : H5T_FLOAT;
  static constexpr const char* name = integer ? "an integer" : "a float";
  static hid_t memory_type() { return integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE; }
};

// H5Literate's and H5Aiterate2's callback: appends each name to a vector of strings.
template <class Info>
herr_t append_name(hid_t, const char* name, const Info*, void* names) {
  static_cast<std::vector<std::string>*>(names)->emplace_back(name);
  return 0;
}

class ResultFileReader {
 public:
  explicit ResultFileReader(const std::string& path) : path_(path) {}

  RunRecord read() {
    open_file();
    RunRecord record;
    read_root_attributes(record);
    for (const std::string& phase : link_names("/timing"))
      record.timing[phase] = read_table("/timing/" + phase, result_schema::kSecondsUnits);
    if (exists("/counters"))  // older files: none
      for (const std::string& name : link_names("/counters"))
        record.counters[name] = read_table("/counters/" + name, result_schema::kCountUnits);
    read_comm(record);
    record.loss = read_vector<double>("/train/loss");
    record.test_accuracy = read_vector<double>("/train/test_accuracy");
    // Files written before mixed precision have no loss scale.
    if (exists("/train/loss_scale")) record.loss_scale = read_vector<double>("/train/loss_scale");
    record.peak_bytes = read_vector<int64_t>("/memory/peak_bytes");
    if (exists("/memory/estimated_bytes"))  // older files: none
      record.estimated_bytes = read_vector<int64_t>("/memory/estimated_bytes");
    if (exists("/memory/peak_rss_bytes"))
      record.peak_rss_bytes = read_vector<int64_t>("/memory/peak_rss_bytes");
    if (exists("/memory/disk_bytes")) record.disk_bytes = read_vector<int64_t>("/memory/disk_bytes");
    if (exists("/placement")) {  // older files: none
      record.rank_nodes = read_vector<int64_t>("/placement/node");
      record.local_ranks = read_vector<int64_t>("/placement/local_rank");
    }
    read_verification(record.verification);
    if (exists("/prediction")) read_prediction(record.prediction);  // runs given --machine
    if (!file_.close()) fail("cannot close the file" + hdf5::error_detail());
    validate_run_record(record, path_);
    return record;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(path_ + ": " + what); }
  bool exists(const char* where) const { return H5Lexists(file_.get(), where, H5P_DEFAULT) > 0; }

  void open_file() {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path_, error)) fail("no such file");
    const htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
    if (is_hdf5 == 0) fail("not an HDF5 file");
    if (is_hdf5 < 0) fail("cannot be read" + hdf5::error_detail());
    const hid_t file = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) fail("cannot open as HDF5" + hdf5::error_detail());
    file_ = Handle(file, H5Fclose);
  }

  // Opens an object by absolute path, requiring it to be of the given kind.
  Handle open_object(const std::string& where, H5I_type_t kind) const {
    // H5Lexists fails rather than answering false when an intermediate group is missing.
    if (!exists(where.c_str())) {
      H5Eclear2(H5E_DEFAULT);
      fail("missing " + where);
    }
    const hid_t id = H5Oopen(file_.get(), where.c_str(), H5P_DEFAULT);
    if (id < 0) fail("cannot open " + where + hdf5::error_detail());
    Handle object(id, H5Oclose);
    if (H5Iget_type(id) != kind)
      fail(where + " is not a " + (kind == H5I_GROUP ? "group" : "dataset"));
    return object;
  }

  std::vector<std::string> link_names(const std::string& where) const {
    Handle group = open_object(where, H5I_GROUP);
    std::vector<std::string> names;
    hsize_t index = 0;
    if (H5Literate(group.get(), H5_INDEX_NAME, H5_ITER_INC, &index, append_name<H5L_info_t>,
                   &names) < 0)
      fail("cannot list " + where + hdf5::error_detail());
    return names;
  }

  // An open scalar attribute, its type, and how messages name it.
  struct Attribute {
    Handle id, type;
    std::string what;  // "root attribute N" or "attribute N of W"
  };

  Attribute open_attribute(hid_t object, const std::string& name, const std::string& where) const {
    const std::string what =
        where == "/" ? "root attribute " + name : "attribute " + name + " of " + where;
    const htri_t exists = H5Aexists(object, name.c_str());
    if (exists < 0) fail("cannot read attributes of " + where + hdf5::error_detail());
    if (exists == 0) fail("missing " + what);
    const hid_t id = H5Aopen(object, name.c_str(), H5P_DEFAULT);
    if (id < 0) fail("cannot open " + what + hdf5::error_detail());
    Attribute attribute{Handle(id, H5Aclose), Handle(H5Aget_type(id), H5Tclose), what};
    Handle space(H5Aget_space(id), H5Sclose);
    if (space.get() < 0 || H5Sget_simple_extent_type(space.get()) != H5S_SCALAR)
      fail(what + " is not a scalar");
    return attribute;
  }

  // Variable-length (as h5py writes) or fixed-length strings.
  std::string read_string_attribute(hid_t object, const std::string& name,
                                    const std::string& where) const {
    const Attribute attribute = open_attribute(object, name, where);
    const hid_t file_type = attribute.type.get();  // H5Tget_class gives H5T_NO_CLASS if invalid
    if (H5Tget_class(file_type) != H5T_STRING) fail(attribute.what + " is not a string");
    std::string value;
    if (!hdf5::read_text_attribute(attribute.id.get(), file_type, value))
      fail("cannot read " + attribute.what + hdf5::error_detail());
    return value;
  }

  template <class T>
  T read_number_attribute(hid_t object, const std::string& name, const std::string& where) const {
    const Attribute attribute = open_attribute(object, name, where);
    if (H5Tget_class(attribute.type.get()) != Number<T>::type_class)
      fail(attribute.what + " is not " + Number<T>::name);
    T value{};
    if (H5Aread(attribute.id.get(), Number<T>::memory_type(), &value) < 0)
      fail("cannot read " + attribute.what + hdf5::error_detail());
    return value;
  }

  // The names of `object`'s attributes (`what` names it in messages).
  std::vector<std::string> attribute_names(hid_t object, const std::string& what) const {
    std::vector<std::string> names;
    hsize_t index = 0;
    if (H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &index, append_name<H5A_info_t>,
                    &names) < 0)
      fail("cannot list the attributes of " + what + hdf5::error_detail());
    return names;
  }

  void read_root_attributes(RunRecord& record) const {
    const hid_t root = file_.get();
    const std::vector<std::string> names = attribute_names(root, "the file");

    const std::string version_name(result_schema::kVersionAttribute);
    bool has_version = false;
    for (const std::string& name : names) {
      const H5T_class_t type_class = H5Tget_class(open_attribute(root, name, "/").type.get());
      if (name == version_name) {
        const auto version = read_number_attribute<int64_t>(root, name, "/");
        if (version != result_schema::kVersion)
          fail("schema_version is " + std::to_string(version) + ", this reader knows " +
               std::to_string(result_schema::kVersion));
        has_version = true;
      } else if (type_class == H5T_STRING) {
        record.string_attributes[name] = read_string_attribute(root, name, "/");
      } else if (type_class == H5T_INTEGER) {
        record.integer_attributes[name] = read_number_attribute<int64_t>(root, name, "/");
      } else {
        fail("root attribute " + name + " is neither a string nor an integer");
      }
    }
    if (!has_version) fail("missing root attribute " + version_name);
  }

  // Reads a dataset of the given rank (and units attribute, when given); dims receives its shape.
  template <class T>
  std::vector<T> read_dataset(const std::string& where, int rank, std::vector<hsize_t>& dims,
                              std::string_view units = {}) const {
    Handle dataset = open_object(where, H5I_DATASET);
    if (!units.empty()) {
      const std::string found = read_string_attribute(dataset.get(), "units", where);
      if (found != units)
        fail("attribute units of " + where + " is '" + found + "', expected '" +
             std::string(units) + "'");
    }
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    if (type.get() < 0 || H5Tget_class(type.get()) != Number<T>::type_class)
      fail(where + " is not of " + Number<T>::name + " type");
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    if (space.get() < 0 || H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE ||
        H5Sget_simple_extent_ndims(space.get()) != rank)
      fail(where + " is not " + std::to_string(rank) + "-dimensional");
    dims.assign(static_cast<size_t>(rank), 0);
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    std::vector<T> values(std::accumulate(dims.begin(), dims.end(), hsize_t{1}, std::multiplies()));
    if (!values.empty() && H5Dread(dataset.get(), Number<T>::memory_type(), H5S_ALL, H5S_ALL,
                                   H5P_DEFAULT, values.data()) < 0)
      fail("cannot read " + where + hdf5::error_detail());
    return values;
  }

  template <class T>
  std::vector<T> read_vector(const std::string& where) const {
    std::vector<hsize_t> dims;
    return read_dataset<T>(where, 1, dims);
  }

  IterationRankTable read_table(const std::string& where, std::string_view units) const {
    std::vector<hsize_t> dims;
    std::vector<double> values = read_dataset<double>(where, 2, dims, units);
    return {static_cast<int64_t>(dims[0]), static_cast<int64_t>(dims[1]), std::move(values)};
  }

  void read_comm(RunRecord& record) const {
    for (const std::string& kind : link_names("/comm")) {
      const std::string where = "/comm/" + kind;
      CommRecord& comm = record.comm[kind];
      const Handle group = open_object(where, H5I_GROUP);
      comm.kind = read_string_attribute(group.get(), "kind", where);
      comm.group_size = read_number_attribute<int64_t>(group.get(), "group_size", where);
      comm.time_seconds = read_table(where + "/time", result_schema::kSecondsUnits);
      comm.bytes = read_table(where + "/bytes", result_schema::kBytesUnits);
    }
  }

  void read_verification(Verification& verification) const {
    const std::string where = "/verification";
    Handle group = open_object(where, H5I_GROUP);
    verification.verdict = read_string_attribute(group.get(), "verdict", where);
    verification.max_relative_error =
        read_number_attribute<double>(group.get(), "max_relative_error", where);
    verification.tolerance = read_number_attribute<double>(group.get(), "tolerance", where);
    verification.worst_at = read_string_attribute(group.get(), "worst_at", where);
    verification.serial_fp32_error =
        read_number_attribute<double>(group.get(), "serial_fp32_error", where);
  }

  void read_prediction(RecordedPrediction& prediction) const {
    const std::string where = "/prediction";
    Handle group = open_object(where, H5I_GROUP);
    for (const std::string& name : attribute_names(group.get(), where)) {
      if (name == "machine")
        prediction.machine = read_string_attribute(group.get(), name, where);
      else if (name == "machine_file")
        prediction.machine_file = read_string_attribute(group.get(), name, where);
      else if (name == "oversubscribed")
        prediction.oversubscribed = read_number_attribute<int64_t>(group.get(), name, where) != 0;
      else
        prediction.figures[name] = read_number_attribute<double>(group.get(), name, where);
    }
    if (prediction.machine.empty()) fail("missing attribute machine of " + where);
  }

  std::string path_;
  Handle file_;
};

}  // namespace

RunRecord read_results_hdf5(const std::string& path) {
  hdf5::silence_errors();
  return ResultFileReader(path).read();
}

}  // namespace mlps

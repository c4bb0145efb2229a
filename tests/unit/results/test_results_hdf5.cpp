// Result files: write/read round trip, atomic writes, schema checks on read, h5py compatibility,
// and the run-info helpers that fill the root attributes.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "src/base/errors.h"
#include "src/results/run_info.h"
#include "src/results/run_record.h"
#include "src/results/schema.h"
#include "tests/temp_dir_test.h"

namespace mlps {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test for result files.
class ResultsHdf5Test : public TempDirTest {
 protected:
  ResultsHdf5Test() : TempDirTest("mlps_results_") {}

  std::string file(const std::string& name) const { return (dir_ / name).string(); }
};

IterationRankTable make_table(int64_t iterations, int64_t ranks, double scale) {
  IterationRankTable table{iterations, ranks, {}};
  for (int64_t i = 0; i < iterations * ranks; ++i)
    table.values.push_back(scale * (1.0 + static_cast<double>(i)) / 3.0);
  return table;
}

// Every required field, 2 ranks × 3 iterations, one comm kind, no test accuracy.
RunRecord full_record() {
  RunRecord record;
  for (std::string_view name : result_schema::kRequiredStringAttributes)
    record.string_attributes[std::string(name)] = "value of " + std::string(name);
  record.string_attributes["config_json"] = R"({"hidden": 2048, "note": "ünïcødé ✓"})";
  record.string_attributes["command_line"] = "bin/data --dp 2 --out 'my results/x.h5'";
  record.string_attributes["grid"] = "";  // empty strings must survive too
  record.integer_attributes = {{"world_size", 2},
                               {"warmup_iterations", 1},
                               {"iterations", 3},
                               {"parameters", 142686218},
                               {"extra_counter", -(int64_t{1} << 40)}};
  double scale = 1e-3;
  for (std::string_view phase : result_schema::kRequiredPhases)
    record.timing[std::string(phase)] = make_table(3, 2, scale *= 1.7);
  record.timing["exposed_comm"] = make_table(3, 2, 0.25);
  record.comm["allreduce"] = CommRecord{make_table(3, 2, 2e-4), make_table(3, 2, 3.0e8), "allreduce", 2};
  record.loss = {2.302585092994046, 1.9, 0.1 + 0.2};
  record.peak_bytes = {(int64_t{1} << 33) + 7, 123456789};
  record.verification = {"PASS", 3.5e-13, 1e-10, "block0.fc1.weight", 2.5e-6};
  record.prediction = {"h100 cluster", "inputs/machines/h100-cluster.json",  // --machine
                       {{"step_seconds", 0.125}, {"peak_bytes", 3.5e9}}, true};
  return record;
}

void expect_tables_equal(const IterationRankTable& a, const IterationRankTable& b,
                         const std::string& what) {
  EXPECT_EQ(a.iterations, b.iterations) << what;
  EXPECT_EQ(a.ranks, b.ranks) << what;
  EXPECT_EQ(a.values, b.values) << what;  // bit-exact: float64 on both sides
}

void expect_records_equal(const RunRecord& a, const RunRecord& b) {
  EXPECT_EQ(a.string_attributes, b.string_attributes);
  EXPECT_EQ(a.integer_attributes, b.integer_attributes);
  ASSERT_EQ(a.timing.size(), b.timing.size());
  for (const auto& [phase, table] : a.timing) {
    ASSERT_TRUE(b.timing.contains(phase)) << phase;
    expect_tables_equal(table, b.timing.at(phase), "/timing/" + phase);
  }
  ASSERT_EQ(a.comm.size(), b.comm.size());
  for (const auto& [kind, comm] : a.comm) {
    ASSERT_TRUE(b.comm.contains(kind)) << kind;
    expect_tables_equal(comm.time_seconds, b.comm.at(kind).time_seconds, kind + " time");
    expect_tables_equal(comm.bytes, b.comm.at(kind).bytes, kind + " bytes");
    EXPECT_EQ(comm.kind, b.comm.at(kind).kind);
    EXPECT_EQ(comm.group_size, b.comm.at(kind).group_size);
  }
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.test_accuracy, b.test_accuracy);
  EXPECT_EQ(a.peak_bytes, b.peak_bytes);
  EXPECT_EQ(a.verification.verdict, b.verification.verdict);
  EXPECT_EQ(a.verification.max_relative_error, b.verification.max_relative_error);
  EXPECT_EQ(a.verification.tolerance, b.verification.tolerance);
  EXPECT_EQ(a.verification.worst_at, b.verification.worst_at);
  EXPECT_EQ(a.verification.serial_fp32_error, b.verification.serial_fp32_error);
  EXPECT_EQ(a.prediction.machine, b.prediction.machine);
  EXPECT_EQ(a.prediction.machine_file, b.prediction.machine_file);
  EXPECT_EQ(a.prediction.oversubscribed, b.prediction.oversubscribed);
  EXPECT_EQ(a.prediction.figures, b.prediction.figures);
}

// Expects read_results_hdf5 to throw an InputError whose message contains every fragment.
void expect_read_error(const std::string& path, const std::vector<std::string>& fragments) {
  try {
    read_results_hdf5(path);
    ADD_FAILURE() << "reading " << path << " did not throw";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << message << " lacks " << fragment;
  }
}

void expect_validation_error(const RunRecord& record, const std::string& fragment) {
  try {
    validate_run_record(record, "run.h5");
    ADD_FAILURE() << "validation accepted a record that should fail with " << fragment;
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

// Edits a written file with the HDF5 C API directly.
template <class Edit>
void edit_file(const std::string& path, Edit edit) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  edit(file);
  ASSERT_GE(H5Fclose(file), 0);
}

TEST_F(ResultsHdf5Test, RoundTripKeepsEveryField) {
  const RunRecord written = full_record();
  const std::string path = file("run.h5");
  write_results_hdf5(path, written);
  const RunRecord read = read_results_hdf5(path);
  expect_records_equal(written, read);
  EXPECT_TRUE(read.test_accuracy.empty());

  RunRecord with_accuracy = written;
  with_accuracy.test_accuracy = {0.25, 0.875};
  with_accuracy.comm.clear();  // /comm exists even when empty
  with_accuracy.verification = {"not run", 0.0, 0.0, "", 0.0};
  // Larger than an HDF5 object header may hold inline (64 KiB).
  with_accuracy.string_attributes["config_json"] = "[" + std::string(200000, '1') + "]";
  write_results_hdf5(path, with_accuracy);  // replaces the earlier file
  expect_records_equal(with_accuracy, read_results_hdf5(path));
  with_accuracy.prediction = {};  // a run without --machine has no /prediction
  write_results_hdf5(path, with_accuracy);
  EXPECT_TRUE(read_results_hdf5(path).prediction.machine.empty());
}

TEST_F(ResultsHdf5Test, WriteLeavesNoTemporaryFile) {
  write_results_hdf5(file("run.h5"), full_record());
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"run.h5"});
}

TEST_F(ResultsHdf5Test, WriteCreatesMissingDirectories) {
  const std::string path = file("a/b/c/run.h5");
  write_results_hdf5(path, full_record());
  EXPECT_EQ(read_results_hdf5(path).loss, full_record().loss);
}

TEST_F(ResultsHdf5Test, FailedRenameRemovesTemporaryAndNamesPath) {
  // The target is a non-empty directory, so the final rename fails after the file is written.
  const std::string path = file("taken");
  fs::create_directories(path);
  std::ofstream(path + "/keep") << "x";
  try {
    write_results_hdf5(path, full_record());
    ADD_FAILURE() << "writing over a directory did not throw";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename(), "taken") << "left behind: " << entry.path();
}

TEST_F(ResultsHdf5Test, WriterRefusesRecordBreakingTheSchema) {
  RunRecord record = full_record();
  record.string_attributes.erase("hosts");
  const std::string path = file("run.h5");
  try {
    write_results_hdf5(path, record);
    ADD_FAILURE() << "writer accepted a record without hosts";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("hosts"), std::string::npos) << message;
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(ResultsHdf5Test, ReadRejectsMissingDataset) {
  const std::string path = file("run.h5");
  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) { ASSERT_GE(H5Ldelete(f, "/timing/forward", H5P_DEFAULT), 0); });
  expect_read_error(path, {"missing", "/timing/forward"});

  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) { ASSERT_GE(H5Ldelete(f, "/train", H5P_DEFAULT), 0); });
  expect_read_error(path, {"missing", "/train/loss"});

  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) { ASSERT_GE(H5Ldelete(f, "/comm", H5P_DEFAULT), 0); });
  expect_read_error(path, {"missing", "/comm"});
}

TEST_F(ResultsHdf5Test, ReadRejectsMissingAttribute) {
  const std::string path = file("run.h5");
  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) { ASSERT_GE(H5Adelete(f, "hosts"), 0); });
  expect_read_error(path, {"missing", "hosts"});

  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) { ASSERT_GE(H5Adelete(f, "schema_version"), 0); });
  expect_read_error(path, {"missing", "schema_version"});

  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) {
    ASSERT_GE(H5Adelete_by_name(f, "/timing/step", "units", H5P_DEFAULT), 0);
  });
  expect_read_error(path, {"missing", "units", "/timing/step"});

  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) {
    ASSERT_GE(H5Adelete_by_name(f, "/verification", "tolerance", H5P_DEFAULT), 0);
  });
  expect_read_error(path, {"missing", "tolerance"});

  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) {
    ASSERT_GE(H5Adelete_by_name(f, "/comm/allreduce/bytes", "units", H5P_DEFAULT), 0);
    const hid_t dataset = H5Dopen2(f, "/comm/allreduce/bytes", H5P_DEFAULT);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 7);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t units = H5Acreate2(dataset, "units", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Awrite(units, type, "seconds"), 0);
    H5Aclose(units);
    H5Sclose(scalar);
    H5Tclose(type);
    H5Dclose(dataset);
  });
  expect_read_error(path, {"units of /comm/allreduce/bytes is 'seconds', expected 'bytes'"});
}

TEST_F(ResultsHdf5Test, ReadRejectsMismatchedShapes) {
  // A file written directly with the C API whose /timing/step has one row too few.
  const std::string path = file("run.h5");
  write_results_hdf5(path, full_record());
  edit_file(path, [](hid_t f) {
    ASSERT_GE(H5Ldelete(f, "/timing/step", H5P_DEFAULT), 0);
    const hsize_t dims[2] = {2, 2};
    const double values[4] = {1, 2, 3, 4};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dataset = H5Dcreate2(f, "/timing/step", H5T_IEEE_F64LE, space, H5P_DEFAULT,
                                     H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(dataset, 0);
    ASSERT_GE(H5Dwrite(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), 0);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 8);
    const hid_t scalar = H5Screate(H5S_SCALAR);
    const hid_t units = H5Acreate2(dataset, "units", type, scalar, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(H5Awrite(units, type, "seconds"), 0);  // fixed-length strings are read too
    H5Aclose(units);
    H5Sclose(scalar);
    H5Tclose(type);
    H5Dclose(dataset);
    H5Sclose(space);
  });
  expect_read_error(path, {"/timing/step", "2 rows", "expected 3"});
}

TEST_F(ResultsHdf5Test, ReadRejectsFilesThatAreNotHdf5) {
  const std::string text = file("notes.h5");
  std::ofstream(text) << "this is not an HDF5 file\n";
  expect_read_error(text, {"not an HDF5 file"});
  expect_read_error(file("absent.h5"), {"no such file"});
}

TEST(ResultsSchema, ValidationAcceptsFullRecordAndRejectsBrokenOnes) {
  EXPECT_NO_THROW(validate_run_record(full_record(), "run.h5"));

  RunRecord record = full_record();
  record.integer_attributes.erase("warmup_iterations");
  expect_validation_error(record, "run.h5: missing root attribute warmup_iterations");

  record = full_record();
  record.timing.erase("optimizer");
  expect_validation_error(record, "run.h5: missing /timing/optimizer");

  record = full_record();
  record.timing["step"] = make_table(2, 2, 1.0);  // rows ≠ /train/loss length
  expect_validation_error(record, "/timing/step has 2 rows, expected 3");

  record = full_record();
  record.comm["allreduce"].bytes = make_table(3, 1, 1.0);
  expect_validation_error(record, "/comm/allreduce/bytes has 1 columns, expected 2");

  record = full_record();
  record.timing["data"].values.pop_back();
  expect_validation_error(record, "/timing/data holds 5 values, not 3 × 2");

  record = full_record();
  record.loss.push_back(0.5);
  expect_validation_error(record, "/train/loss has 4 values, expected 3");

  record = full_record();
  record.peak_bytes = {1};
  expect_validation_error(record, "/memory/peak_bytes has 1 values, expected 2");

  record = full_record();
  record.integer_attributes["warmup_iterations"] = 4;
  expect_validation_error(record, "warmup_iterations is 4");

  record = full_record();
  record.verification.verdict = "maybe";
  expect_validation_error(record, "verdict is 'maybe'");

  record = full_record();
  record.timing["a/b"] = make_table(3, 2, 1.0);
  expect_validation_error(record, "'a/b' cannot be a dataset name");

  record = full_record();
  record.integer_attributes["schema_version"] = 1;
  expect_validation_error(record, "schema_version");
}

// Finds a Python with h5py: the project's .venv first, then python3 on PATH.
std::string python_with_h5py() {
  for (const std::string python : {".venv/bin/python3", "python3"})
    if (std::system((python + " -c 'import h5py' >/dev/null 2>&1").c_str()) == 0) return python;
  return "";
}

TEST_F(ResultsHdf5Test, H5pyReadsTheFile) {
  const std::string python = python_with_h5py();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py (.venv/bin/python3 or python3)";
  const std::string path = file("run.h5");
  write_results_hdf5(path, full_record());
  const std::string script = file("read.py");
  std::ofstream(script) << R"(import sys, h5py
f = h5py.File(sys.argv[1], "r")
print(f["train/loss"].shape, f["timing/step"].shape, f["train/test_accuracy"][()].shape)
print(repr(float(f["train/loss"][2])), f["timing/step"].attrs["units"], f.attrs["world_size"])
print(f.attrs["config_json"], f.attrs["schema_version"], f["verification"].attrs["verdict"])
print(f["memory/peak_bytes"].dtype, sorted(f["comm"]), sorted(f["comm/allreduce"]))
)";
  const std::string output = file("out.txt");
  ASSERT_EQ(std::system((python + " " + script + " " + path + " > " + output + " 2>&1").c_str()),
            0);
  std::stringstream text;
  text << std::ifstream(output).rdbuf();
  const RunRecord record = full_record();
  std::ostringstream expected;
  expected << "(3,) (3, 2) (0,)\n"
           << "0.30000000000000004 seconds 2\n"
           << record.string_attributes.at("config_json") << " 1 PASS\n"
           << "int64 ['allreduce'] ['bytes', 'time']\n";
  EXPECT_EQ(text.str(), expected.str());
}

TEST(RunInfo, CommandLineQuotesOnlyWhereNeeded) {
  std::vector<std::string> args = {"bin/data", "--dp", "2",   "--out=a/b.h5", "my results/x.h5",
                                   "it's",     "",     "$HOME", "--lr", "1e-3"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  EXPECT_EQ(command_line(static_cast<int>(argv.size()), argv.data()),
            "bin/data --dp 2 --out=a/b.h5 'my results/x.h5' 'it'\"'\"'s' '' '$HOME' --lr 1e-3");
}

TEST(RunInfo, EnvironmentStrings) {
  const std::string hosts = host_names(MPI_COMM_WORLD);
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_Get_processor_name(name, &length);
  EXPECT_NE(hosts.find(std::string(name, static_cast<size_t>(length))), std::string::npos) << hosts;

  EXPECT_TRUE(std::regex_match(utc_timestamp_now(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << utc_timestamp_now();
  EXPECT_EQ(hdf5_library_version(), std::to_string(H5_VERS_MAJOR) + "." +
                                        std::to_string(H5_VERS_MINOR) + "." +
                                        std::to_string(H5_VERS_RELEASE));
  for (const std::string& value :
       {mpi_library_version(), git_commit(), cuda_version(), nccl_version()}) {
    EXPECT_FALSE(value.empty());
    EXPECT_EQ(value.find('\n'), std::string::npos) << value;
  }
}

}  // namespace
}  // namespace mlps

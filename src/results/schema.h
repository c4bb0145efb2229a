#pragma once
// The result-file schema's required names, kept in sync by hand with results/README.md. The
// writer refuses a RunRecord that breaks it and the reader rejects a file that does.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/results/run_record.h"

namespace mlps::result_schema {

// Root attribute written by write_results_hdf5 itself; a record must not set it.
inline constexpr std::string_view kVersionAttribute = "schema_version";
inline constexpr int64_t kVersion = 1;

inline constexpr std::array<std::string_view, 15> kRequiredStringAttributes = {
    "scheme",       "grid",       "device",       "comm",         "precision",
    "data",         "config_json", "command_line", "git_commit",   "mpi_version",
    "nccl_version", "cuda_version", "hdf5_version", "hosts",        "start_time"};

inline constexpr std::array<std::string_view, 4> kRequiredIntegerAttributes = {
    "world_size", "warmup_iterations", "iterations", "parameters"};

// /timing/<phase> datasets every run has; a scheme may add more phases.
inline constexpr std::array<std::string_view, 5> kRequiredPhases = {"step", "forward", "backward",
                                                                    "optimizer", "data"};

inline constexpr std::array<std::string_view, 3> kVerdicts = {"PASS", "FAIL", "not run"};

inline constexpr std::string_view kSecondsUnits = "seconds";
inline constexpr std::string_view kBytesUnits = "bytes";
inline constexpr std::string_view kCountUnits = "calls";

}  // namespace mlps::result_schema

namespace mlps {

// Throws InputError("<path_for_messages>: missing <field>" or a one-line shape mismatch) when
// the record does not follow the schema: required attributes and phases present, every
// [iterations × ranks] table, /train/loss and /memory/peak_bytes sized by the iterations and
// world_size attributes, names usable as HDF5 link names, a known verdict.
void validate_run_record(const RunRecord& record, const std::string& path_for_messages);

}  // namespace mlps

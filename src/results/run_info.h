#pragma once
// The environment of a run, for the root attributes of its result file (results/README.md).
#include <mpi.h>

#include <map>
#include <string>

namespace mlps {

// Commit the library was built from (passed in by the Makefile, "-dirty" when modified), else
// "unknown".
std::string git_commit();
// First line of MPI_Get_library_version, e.g. "MPICH Version: 4.0".
std::string mpi_library_version();
// Version of the HDF5 library linked at run time, e.g. "1.10.8".
std::string hdf5_library_version();
// GPU name and CUDA runtime/driver versions, or "not built" without the CUDA backend.
std::string cuda_version();
// NCCL version, e.g. "2.21.5", or "not built" without NCCL.
std::string nccl_version();
// The processor and the kernels its BLAS runs (kernels/cpu/blas_core.h), as the string
// attributes every result file carries: blas, blas_core, blas_core_source, blas_config,
// cpu_model, cpu_features and, where there is one, blas_notice.
std::map<std::string, std::string> processor_attributes();
// Collective over comm: the distinct processor names of all ranks, comma-separated in the order
// of the first rank on each; the same string on every rank.
std::string host_names(MPI_Comm comm);
// Now in ISO 8601 UTC, e.g. "2024-05-01T12:34:56Z".
std::string utc_timestamp_now();
// argv joined by spaces, each argument quoted as a POSIX shell would need it (as Python's
// shlex.quote), so the line can be pasted back into a shell.
std::string command_line(int argc, char** argv);

}  // namespace mlps

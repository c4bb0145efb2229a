#include "src/results/run_info.h"

#include <hdf5.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string_view>
#include <vector>

#include "kernels/cpu/blas_core.h"
#ifdef MLPSCALE_WITH_CUDA
#include "kernels/kernels.h"
#endif
#ifdef MLPSCALE_WITH_NCCL
#include <nccl.h>
#endif

namespace mlps {

std::string git_commit() {
#ifdef MLPSCALE_GIT_COMMIT
  return MLPSCALE_GIT_COMMIT;
#else
  return "unknown";
#endif
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown";
  // The first line, its words joined by single spaces (MPICH separates its fields with tabs).
  const std::string all(text, static_cast<size_t>(length));
  std::istringstream words(all.substr(0, all.find('\n')));
  std::string line, word;
  while (words >> word) line += (line.empty() ? "" : " ") + word;
  return line;
}

std::string hdf5_library_version() {
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) < 0) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

std::string cuda_version() {
#ifdef MLPSCALE_WITH_CUDA
  const char* text = cuda::runtime_version_string();
  return text != nullptr ? text : "unknown";
#else
  return "not built";
#endif
}

std::string nccl_version() {
#if defined(MLPSCALE_CUDA_EMULATE)
  return "stand-in over MPI (emulated GPU build)";
#elif defined(MLPSCALE_WITH_NCCL)
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // Codes below 10000 are from NCCL ≤ 2.8, which used major*1000 + minor*100 + patch.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
#else
  return "not built";
#endif
}

std::map<std::string, std::string> processor_attributes() {
  const cpu::BlasInfo blas = cpu::blas_info();
  std::map<std::string, std::string> attributes{
      {"blas", blas.summary()},           {"blas_core", blas.core},
      {"blas_core_source", blas.core_source}, {"blas_config", blas.config},
      {"cpu_model", blas.processor.describe()}, {"cpu_features", blas.feature_list()}};
  if (!blas.notice.empty()) attributes["blas_notice"] = blas.notice;
  return attributes;
}

std::string host_names(MPI_Comm comm) {
  int ranks = 0;
  MPI_Comm_size(comm, &ranks);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(static_cast<size_t>(ranks) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, comm);

  std::vector<std::string> distinct;
  std::string joined;
  for (int r = 0; r < ranks; ++r) {
    const char* begin = all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    const std::string host(begin, strnlen(begin, MPI_MAX_PROCESSOR_NAME));
    if (std::find(distinct.begin(), distinct.end(), host) != distinct.end()) continue;
    joined += (distinct.empty() ? "" : ",") + host;
    distinct.push_back(host);
  }
  return joined;
}

std::string utc_timestamp_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

namespace {

std::string shell_quote(std::string_view argument) {
  constexpr std::string_view kSafe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_";
  if (!argument.empty() && argument.find_first_not_of(kSafe) == std::string_view::npos)
    return std::string(argument);
  std::string quoted = "'";
  for (char c : argument) quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    line += shell_quote(argv[i]);
  }
  return line;
}

}  // namespace mlps

#pragma once
// Which kernels the CPU backend's BLAS runs, and the processor's own where the library would
// fall back. OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels ("core") from the
// processor's vendor, family and model; 0.3.21 (Debian 12) does not know newer models, such as
// Intel family 6 model 207, and falls back to its SSE3 "Prescott" kernels, 2-5x slower at this
// model's GEMMs. It reads OPENBLAS_CORETYPE only when it loads, so a fallback is corrected by
// running the program again with the variable set, before MPI starts (docs/cpu-blas.md).
#include <string>
#include <string_view>
#include <vector>

namespace mlps::cpu {

// The processor as far as the choice of BLAS kernels goes.
struct ProcessorInfo {
  std::string vendor;      // "GenuineIntel", "AuthenticAMD"
  std::string name;        // /proc/cpuinfo's "model name", else the vendor
  int family = 0, model = 0;
  std::vector<std::string> features;  // the vector extensions of kBlasFeatures it has

  bool has(std::string_view feature) const;
  // "AMD EPYC (family 25 model 17)"
  std::string describe() const;
};

// The extensions that decide which kernels can run, oldest first, in /proc/cpuinfo's spelling
// (sse3 is cpuinfo's "pni").
inline constexpr std::string_view kBlasFeatures[] = {
    "sse2", "sse3", "ssse3", "sse4_1", "sse4_2", "avx", "fma", "avx2",
    "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16"};

// This machine's processor (the extensions the OS has enabled, as __builtin_cpu_supports says).
ProcessorInfo this_processor();

// An OpenBLAS x86 core this code knows: its instruction-set tier (higher is newer) and the
// extensions its kernels execute. Lookup ignores case, as OpenBLAS does; nullptr for a name
// outside the table (other architectures, or cores with no place in the order).
struct BlasCore {
  std::string_view name;
  int tier;  // 1 SSE, 2 AVX, 3 AVX2, 4 AVX-512, 5 AVX-512 with bf16
  std::vector<std::string_view> needs;
};
const BlasCore* find_blas_core(std::string_view name);
// The extensions `core` needs that `cpu` lacks (empty: it can run).
std::vector<std::string> missing_features(const BlasCore& core, const ProcessorInfo& cpu);
// The newest core whose kernels `cpu` can run ("Zen" rather than "Haswell" on AMD's AVX2
// processors, as OpenBLAS picks), or "" when none is in the table.
std::string best_blas_core(const ProcessorInfo& cpu);

// What to do at start-up, decided from the library's own core, OPENBLAS_CORETYPE as the user
// or site set it (empty if unset) and the processor.
struct CoreDecision {
  enum Action { keep, reexec, refuse } action = keep;
  std::string core;     // reexec: the core to run
  std::string message;  // refuse: the one-line reason
};
CoreDecision decide_blas_core(std::string_view library_core, std::string_view user_core,
                              const ProcessorInfo& cpu);

// Called first in main(), before MPI_Init and before any BLAS call: when OpenBLAS fell back to
// kernels older than the processor's and OPENBLAS_CORETYPE is unset, sets it to the processor's
// core and executes the program again (same pid, arguments and descriptors, so launchers see
// the same process); when the user's OPENBLAS_CORETYPE names kernels this processor cannot run,
// prints "<program>: error: ..." and exits 2. Otherwise returns, changing nothing.
// MLPSCALE_ASSUME_BLAS_CORE=<core> (for tests) decides as if the library had chosen <core>.
void choose_blas_core(char** argv);

// What the BLAS runs, for the settings header and every result file.
struct BlasInfo {
  std::string library;       // "OpenBLAS 0.3.21"
  std::string config;        // openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  std::string core;          // the kernels in use, "SkylakeX"
  std::string core_source;   // "library", "OPENBLAS_CORETYPE" (the user's) or "mlpscale"
  std::string library_core;  // with "mlpscale": the core the library had chosen itself
  std::string best_core;     // the processor's newest core in the table, or ""
  std::string notice;        // why the core is not the processor's best, or ""
  ProcessorInfo processor;

  // "OpenBLAS 0.3.21, core SkylakeX (chosen by mlpscale: the library chose Prescott)"
  std::string summary() const;
  // "avx2 avx512f ..." (the processor's extensions of kBlasFeatures)
  std::string feature_list() const;
  // "AMD EPYC (AuthenticAMD family 25 model 17): sse2 ... avx512_bf16"
  std::string processor_line() const { return processor.describe() + ": " + feature_list(); }
};
BlasInfo blas_info();

}  // namespace mlps::cpu

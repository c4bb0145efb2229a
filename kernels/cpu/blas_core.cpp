#include "kernels/cpu/blas_core.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace mlps::cpu {
namespace {

// Set by choose_blas_core() beside OPENBLAS_CORETYPE when it re-executes: the core the library
// had chosen, so the run reports why its kernels are not the library's and never loops.
constexpr const char* kCorrectedFrom = "MLPSCALE_BLAS_CORE_CORRECTED_FROM";

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// OpenBLAS 0.3.21's x86 DYNAMIC_ARCH cores with the extensions their kernels execute (its
// kernel/x86_64/KERNEL.<core> files and driver/others/dynamic.c's support checks).
const std::vector<BlasCore>& core_table() {
  static const std::vector<BlasCore> table{
      {"Prescott", 1, {"sse2", "sse3"}},
      {"Core2", 1, {"sse2", "sse3", "ssse3"}},
      {"Penryn", 1, {"sse2", "sse3", "ssse3", "sse4_1"}},
      {"Dunnington", 1, {"sse2", "sse3", "ssse3", "sse4_1"}},
      {"Nehalem", 1, {"sse2", "sse3", "ssse3", "sse4_1", "sse4_2"}},
      {"Sandybridge", 2, {"avx"}},
      {"Haswell", 3, {"avx", "avx2", "fma"}},
      {"Zen", 3, {"avx", "avx2", "fma"}},
      {"SkylakeX", 4, {"avx2", "fma", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}},
      {"Cooperlake",
       5,
       {"avx2", "fma", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16"}},
  };
  return table;
}

std::vector<std::string> detected_features() {
  std::vector<std::string> found;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
  const bool has[] = {
      bool(__builtin_cpu_supports("sse2")),     bool(__builtin_cpu_supports("sse3")),
      bool(__builtin_cpu_supports("ssse3")),    bool(__builtin_cpu_supports("sse4.1")),
      bool(__builtin_cpu_supports("sse4.2")),   bool(__builtin_cpu_supports("avx")),
      bool(__builtin_cpu_supports("fma")),      bool(__builtin_cpu_supports("avx2")),
      bool(__builtin_cpu_supports("avx512f")),  bool(__builtin_cpu_supports("avx512cd")),
      bool(__builtin_cpu_supports("avx512bw")), bool(__builtin_cpu_supports("avx512dq")),
      bool(__builtin_cpu_supports("avx512vl")), bool(__builtin_cpu_supports("avx512bf16"))};
  static_assert(std::size(has) == std::size(kBlasFeatures));
  for (size_t i = 0; i < std::size(has); ++i)
    if (has[i]) found.emplace_back(kBlasFeatures[i]);
#endif
  return found;
}

// True when both cores are in the table and `core`'s kernels are of an older tier than `best`'s.
bool older_tier(std::string_view core, std::string_view best) {
  const BlasCore* a = find_blas_core(core);
  const BlasCore* b = find_blas_core(best);
  return a != nullptr && b != nullptr && a->tier < b->tier;
}

std::string join(const std::vector<std::string>& words, const char* between) {
  std::string text;
  for (const auto& w : words) text += (text.empty() ? "" : between) + w;
  return text;
}

}  // namespace

bool ProcessorInfo::has(std::string_view feature) const {
  return std::find(features.begin(), features.end(), feature) != features.end();
}

std::string ProcessorInfo::describe() const {
  return name + " (" + vendor + " family " + std::to_string(family) + " model " +
         std::to_string(model) + ")";
}

ProcessorInfo this_processor() {
  ProcessorInfo cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char vendor[13] = {};
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
    cpu.vendor = vendor;
  }
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    // The family and model as Intel's and AMD's manuals compose them from the base and
    // extended fields.
    const int base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
    cpu.family = base_family == 0xf ? base_family + int((a >> 20) & 0xff) : base_family;
    cpu.model = base_family == 0x6 || base_family == 0xf ? (int((a >> 16) & 0xf) << 4) + base_model
                                                         : base_model;
  }
#endif
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) cpu.name = line.substr(line.find_first_not_of(" \t", colon + 1));
    break;
  }
  if (cpu.name.empty()) cpu.name = cpu.vendor.empty() ? "unknown processor" : cpu.vendor;
  if (cpu.vendor.empty()) cpu.vendor = "unknown vendor";
  cpu.features = detected_features();
  return cpu;
}

const BlasCore* find_blas_core(std::string_view name) {
  for (const auto& core : core_table())
    if (same_name(core.name, name)) return &core;
  return nullptr;
}

std::vector<std::string> missing_features(const BlasCore& core, const ProcessorInfo& cpu) {
  std::vector<std::string> missing;
  for (auto need : core.needs)
    if (!cpu.has(need)) missing.emplace_back(need);
  return missing;
}

std::string best_blas_core(const ProcessorInfo& cpu) {
  // The table lists each tier's cores from the oldest: the last one that can run wins, but
  // OpenBLAS runs its Zen kernels only on AMD's processors (Haswell's elsewhere).
  const BlasCore* best = nullptr;
  for (const auto& core : core_table()) {
    if (!missing_features(core, cpu).empty()) continue;
    if (core.name == "Zen" && cpu.vendor != "AuthenticAMD") continue;
    if (best == nullptr || core.tier >= best->tier) best = &core;
  }
  return best != nullptr ? std::string(best->name) : "";
}

CoreDecision decide_blas_core(std::string_view library_core, std::string_view user_core,
                              const ProcessorInfo& cpu) {
  CoreDecision decision;
  const std::string best = best_blas_core(cpu);
  if (!user_core.empty()) {
    // The user's or the site's choice is kept, unless its kernels would fault here.
    const BlasCore* core = find_blas_core(user_core);
    if (core != nullptr) {
      const auto missing = missing_features(*core, cpu);
      if (!missing.empty()) {
        decision.action = CoreDecision::refuse;
        decision.message = "OPENBLAS_CORETYPE=" + std::string(user_core) + " names kernels that need " +
                           join(missing, ", ") + ", which this processor (" + cpu.describe() +
                           ") lacks; unset it or name a core it supports, such as " +
                           (best.empty() ? "Prescott" : best);
      }
    }
    return decision;
  }
  if (older_tier(library_core, best)) {
    decision.action = CoreDecision::reexec;
    decision.core = best;
  }
  return decision;
}

void choose_blas_core(char** argv) {
  if (!env(kCorrectedFrom).empty()) return;  // this is the run again, with the core set
  const std::string assumed = env("MLPSCALE_ASSUME_BLAS_CORE");
  const std::string library_core = assumed.empty() ? openblas_get_corename() : assumed;
  const CoreDecision decision =
      decide_blas_core(library_core, env("OPENBLAS_CORETYPE"), this_processor());
  if (decision.action == CoreDecision::refuse) {
    const char* slash = argv && argv[0] ? std::strrchr(argv[0], '/') : nullptr;
    const char* program = slash ? slash + 1 : (argv && argv[0] ? argv[0] : "mlpscale");
    std::fprintf(stderr, "%s: error: %s\n", program, decision.message.c_str());
    std::exit(2);
  }
  if (decision.action != CoreDecision::reexec) return;
  setenv("OPENBLAS_CORETYPE", decision.core.c_str(), 1);
  setenv(kCorrectedFrom, library_core.c_str(), 1);
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
  // Only on failure: carry on with the library's kernels, which blas_info() then reports.
  const int error = errno;
  unsetenv("OPENBLAS_CORETYPE");
  setenv(kCorrectedFrom, "", 1);
  std::fprintf(stderr, "mlpscale: could not run again with OPENBLAS_CORETYPE=%s (%s); "
               "keeping OpenBLAS's %s kernels\n", decision.core.c_str(), std::strerror(error),
               library_core.c_str());
}

BlasInfo blas_info() {
  BlasInfo info;
  info.processor = this_processor();
  info.config = openblas_get_config();
  // The config starts "OpenBLAS 0.3.21 ...": the library and its version.
  const auto second_space = info.config.find(' ', info.config.find(' ') + 1);
  info.library = info.config.substr(0, second_space);
  info.core = openblas_get_corename();
  info.best_core = best_blas_core(info.processor);
  const std::string corrected_from = env(kCorrectedFrom);
  const std::string user_core = env("OPENBLAS_CORETYPE");
  if (!corrected_from.empty()) {
    info.core_source = "mlpscale";
    info.library_core = corrected_from;
  } else if (!user_core.empty()) {
    info.core_source = "OPENBLAS_CORETYPE";
  } else {
    info.core_source = "library";
  }
  if (older_tier(info.core, info.best_core)) {
    info.notice = "the " + info.core + " kernels are older than this processor's " +
                  info.best_core + (info.core_source == "OPENBLAS_CORETYPE"
                                        ? " (OPENBLAS_CORETYPE=" + user_core + " is respected)"
                                        : "");
  } else if (!user_core.empty() && info.core_source == "OPENBLAS_CORETYPE" &&
             find_blas_core(user_core) == nullptr && !same_name(user_core, info.core)) {
    info.notice = "OPENBLAS_CORETYPE=" + user_core + " is not a core this library knows; it chose " +
                  info.core;
  }
  return info;
}

std::string BlasInfo::summary() const {
  std::string text = library + ", core " + core;
  if (core_source == "mlpscale")
    text += " (chosen by mlpscale for this processor: the library chose " + library_core +
            "; set OPENBLAS_CORETYPE to choose yourself)";
  else if (core_source == "OPENBLAS_CORETYPE")
    text += " (set by OPENBLAS_CORETYPE)";
  else
    text += " (the library's choice)";
  return text;
}

std::string BlasInfo::feature_list() const { return join(processor.features, " "); }

}  // namespace mlps::cpu

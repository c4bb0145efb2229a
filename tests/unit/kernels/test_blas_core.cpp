// Which OpenBLAS kernels run: the table of cores, the choice for a processor, the start-up
// decision (correct a fallback, respect the user's setting, refuse kernels that would fault), and
// the kernels this very test binary runs (its main() made the same choice the executables make).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/cpu/blas_core.h"

namespace mlps::cpu {
namespace {

ProcessorInfo processor(std::string vendor, std::vector<std::string> features) {
  ProcessorInfo cpu;
  cpu.vendor = vendor;
  cpu.name = vendor + " test processor";
  cpu.family = vendor == "AuthenticAMD" ? 25 : 6;
  cpu.model = vendor == "AuthenticAMD" ? 17 : 207;
  cpu.features = std::move(features);
  return cpu;
}

const std::vector<std::string> kSse = {"sse2", "sse3", "ssse3", "sse4_1", "sse4_2"};
std::vector<std::string> plus(std::vector<std::string> base, std::vector<std::string> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}
const std::vector<std::string> kAvx2 = plus(kSse, {"avx", "fma", "avx2"});
const std::vector<std::string> kAvx512 =
    plus(kAvx2, {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"});
const std::vector<std::string> kAvx512Bf16 = plus(kAvx512, {"avx512_bf16"});

TEST(BlasCore, TableLookupIgnoresCaseAndKnowsOnlyItsCores) {
  ASSERT_NE(find_blas_core("skylakex"), nullptr);
  EXPECT_EQ(find_blas_core("SKYLAKEX")->name, "SkylakeX");
  EXPECT_EQ(find_blas_core("Bogus"), nullptr);
  EXPECT_EQ(find_blas_core(""), nullptr);
  EXPECT_LT(find_blas_core("Prescott")->tier, find_blas_core("Haswell")->tier);
  EXPECT_LT(find_blas_core("Haswell")->tier, find_blas_core("SkylakeX")->tier);
  EXPECT_EQ(find_blas_core("Haswell")->tier, find_blas_core("Zen")->tier);
}

TEST(BlasCore, BestCoreFollowsTheProcessorsExtensions) {
  // The machine: Intel family 6 model 207 with AVX-512 and bf16.
  EXPECT_EQ(best_blas_core(processor("GenuineIntel", kAvx512Bf16)), "Cooperlake");
  EXPECT_EQ(best_blas_core(processor("GenuineIntel", kAvx512)), "SkylakeX");
  EXPECT_EQ(best_blas_core(processor("GenuineIntel", kAvx2)), "Haswell");
  EXPECT_EQ(best_blas_core(processor("AuthenticAMD", kAvx2)), "Zen");
  EXPECT_EQ(best_blas_core(processor("AuthenticAMD", kAvx512Bf16)), "Cooperlake");
  EXPECT_EQ(best_blas_core(processor("GenuineIntel", plus(kSse, {"avx"}))), "Sandybridge");
  EXPECT_EQ(best_blas_core(processor("GenuineIntel", kSse)), "Nehalem");
  EXPECT_EQ(best_blas_core(processor("GenuineIntel", {"sse2", "sse3"})), "Prescott");
  EXPECT_EQ(best_blas_core(processor("unknown vendor", {})), "");  // not x86: nothing to choose
}

TEST(BlasCore, MissingFeaturesNameWhatTheKernelsNeed) {
  const auto missing = missing_features(*find_blas_core("SkylakeX"), processor("AuthenticAMD", kAvx2));
  ASSERT_FALSE(missing.empty());
  EXPECT_EQ(missing.front(), "avx512f");
  EXPECT_TRUE(missing_features(*find_blas_core("Haswell"), processor("AuthenticAMD", kAvx2)).empty());
}

TEST(BlasCore, AFallbackIsCorrectedWhenTheUserSetNothing) {
  const CoreDecision d = decide_blas_core("Prescott", "", processor("GenuineIntel", kAvx512Bf16));
  EXPECT_EQ(d.action, CoreDecision::reexec);
  EXPECT_EQ(d.core, "Cooperlake");
  const CoreDecision amd = decide_blas_core("Prescott", "", processor("AuthenticAMD", kAvx2));
  EXPECT_EQ(amd.action, CoreDecision::reexec);
  EXPECT_EQ(amd.core, "Zen");
}

TEST(BlasCore, TheLibrarysOwnChoiceIsKeptWhenItIsTheProcessors) {
  EXPECT_EQ(decide_blas_core("SkylakeX", "", processor("GenuineIntel", kAvx512)).action,
            CoreDecision::keep);
  EXPECT_EQ(decide_blas_core("Zen", "", processor("AuthenticAMD", kAvx2)).action,
            CoreDecision::keep);
  // Haswell's kernels on AMD's AVX2 processors are the same tier: not a fallback.
  EXPECT_EQ(decide_blas_core("Haswell", "", processor("AuthenticAMD", kAvx2)).action,
            CoreDecision::keep);
  // A core outside the table (another architecture's) is never second-guessed.
  EXPECT_EQ(decide_blas_core("NEOVERSEN1", "", processor("unknown vendor", {})).action,
            CoreDecision::keep);
}

TEST(BlasCore, TheUsersSettingIsRespectedEvenWhenOlder) {
  const CoreDecision d = decide_blas_core("Prescott", "Prescott", processor("GenuineIntel", kAvx512));
  EXPECT_EQ(d.action, CoreDecision::keep);
  EXPECT_EQ(decide_blas_core("Cooperlake", "Bogus", processor("GenuineIntel", kAvx512)).action,
            CoreDecision::keep);
}

TEST(BlasCore, KernelsTheProcessorCannotRunAreRefusedInOneLine) {
  const CoreDecision d = decide_blas_core("Zen", "SkylakeX", processor("AuthenticAMD", kAvx2));
  ASSERT_EQ(d.action, CoreDecision::refuse);
  EXPECT_NE(d.message.find("OPENBLAS_CORETYPE=SkylakeX"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("avx512f"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("Zen"), std::string::npos) << d.message;  // what to use instead
  EXPECT_EQ(d.message.find('\n'), std::string::npos);
  EXPECT_EQ(decide_blas_core("SkylakeX", "Cooperlake", processor("GenuineIntel", kAvx512)).action,
            CoreDecision::refuse);
}

TEST(BlasCore, ThisProcessIsReportedAndRunsTheProcessorsKernels) {
  const BlasInfo info = blas_info();
  EXPECT_EQ(info.library.rfind("OpenBLAS ", 0), 0u) << info.library;
  EXPECT_FALSE(info.core.empty());
  EXPECT_FALSE(info.processor.name.empty());
  const BlasCore* running = find_blas_core(info.core);
  const BlasCore* best = find_blas_core(info.best_core);
  if (running == nullptr || best == nullptr)
    GTEST_SKIP() << "core " << info.core << " on " << info.processor.describe()
                 << " is outside the x86 table: nothing to compare";
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (info.core_source == "OPENBLAS_CORETYPE") {
    ASSERT_NE(user, nullptr);
    // The user's choice is kept; an older one is explained.
    if (running->tier < best->tier) {
      EXPECT_FALSE(info.notice.empty());
    }
  } else {
    // Unset (or set by mlpscale's own correction): the processor's newest kernels run.
    EXPECT_EQ(running->tier, best->tier)
        << info.summary() << " on " << info.processor.describe() << " (best " << info.best_core
        << ")";
    EXPECT_TRUE(info.notice.empty()) << info.notice;
  }
}

}  // namespace
}  // namespace mlps::cpu

#include "bench/support/fma_peak.h"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <type_traits>

namespace mlps::kernel_bench {
namespace {

// Enough independent chains to cover the FMA latency (4-5 cycles) on two FMA pipes, and few
// enough that they stay in registers (16 of AVX-512's 32, 12 of AVX2's 16). Each chain is
// x = x * a + b with a just below 1, so values stay finite however long it runs.
constexpr int kChains512 = 16, kChains256 = 12, kChains128 = 12;

template <typename T>
constexpr T kA = T(0.999999);
template <typename T>
constexpr T kB = T(1e-6);

__attribute__((target("avx512f"))) double chains_avx512(int64_t rounds, float) {
  __m512 x[kChains512];
  const __m512 a = _mm512_set1_ps(kA<float>), b = _mm512_set1_ps(kB<float>);
  for (int j = 0; j < kChains512; ++j) x[j] = _mm512_set1_ps(float(j));
  for (int64_t i = 0; i < rounds; ++i)
    for (int j = 0; j < kChains512; ++j) x[j] = _mm512_fmadd_ps(x[j], a, b);
  for (int j = 1; j < kChains512; ++j) x[0] = _mm512_add_ps(x[0], x[j]);
  float lanes[16];
  _mm512_storeu_ps(lanes, x[0]);
  return lanes[0];
}
__attribute__((target("avx512f"))) double chains_avx512(int64_t rounds, double) {
  __m512d x[kChains512];
  const __m512d a = _mm512_set1_pd(kA<double>), b = _mm512_set1_pd(kB<double>);
  for (int j = 0; j < kChains512; ++j) x[j] = _mm512_set1_pd(double(j));
  for (int64_t i = 0; i < rounds; ++i)
    for (int j = 0; j < kChains512; ++j) x[j] = _mm512_fmadd_pd(x[j], a, b);
  for (int j = 1; j < kChains512; ++j) x[0] = _mm512_add_pd(x[0], x[j]);
  double lanes[8];
  _mm512_storeu_pd(lanes, x[0]);
  return lanes[0];
}
__attribute__((target("avx2,fma"))) double chains_avx2(int64_t rounds, float) {
  __m256 x[kChains256];
  const __m256 a = _mm256_set1_ps(kA<float>), b = _mm256_set1_ps(kB<float>);
  for (int j = 0; j < kChains256; ++j) x[j] = _mm256_set1_ps(float(j));
  for (int64_t i = 0; i < rounds; ++i)
    for (int j = 0; j < kChains256; ++j) x[j] = _mm256_fmadd_ps(x[j], a, b);
  for (int j = 1; j < kChains256; ++j) x[0] = _mm256_add_ps(x[0], x[j]);
  float lanes[8];
  _mm256_storeu_ps(lanes, x[0]);
  return lanes[0];
}
__attribute__((target("avx2,fma"))) double chains_avx2(int64_t rounds, double) {
  __m256d x[kChains256];
  const __m256d a = _mm256_set1_pd(kA<double>), b = _mm256_set1_pd(kB<double>);
  for (int j = 0; j < kChains256; ++j) x[j] = _mm256_set1_pd(double(j));
  for (int64_t i = 0; i < rounds; ++i)
    for (int j = 0; j < kChains256; ++j) x[j] = _mm256_fmadd_pd(x[j], a, b);
  for (int j = 1; j < kChains256; ++j) x[0] = _mm256_add_pd(x[0], x[j]);
  double lanes[4];
  _mm256_storeu_pd(lanes, x[0]);
  return lanes[0];
}
// Without FMA: a multiply and an add per element, in SSE2's 128-bit registers.
double chains_sse2(int64_t rounds, float) {
  __m128 x[kChains128];
  const __m128 a = _mm_set1_ps(kA<float>), b = _mm_set1_ps(kB<float>);
  for (int j = 0; j < kChains128; ++j) x[j] = _mm_set1_ps(float(j));
  for (int64_t i = 0; i < rounds; ++i)
    for (int j = 0; j < kChains128; ++j) x[j] = _mm_add_ps(_mm_mul_ps(x[j], a), b);
  for (int j = 1; j < kChains128; ++j) x[0] = _mm_add_ps(x[0], x[j]);
  return _mm_cvtss_f32(x[0]);
}
double chains_sse2(int64_t rounds, double) {
  __m128d x[kChains128];
  const __m128d a = _mm_set1_pd(kA<double>), b = _mm_set1_pd(kB<double>);
  for (int j = 0; j < kChains128; ++j) x[j] = _mm_set1_pd(double(j));
  for (int64_t i = 0; i < rounds; ++i)
    for (int j = 0; j < kChains128; ++j) x[j] = _mm_add_pd(_mm_mul_pd(x[j], a), b);
  for (int j = 1; j < kChains128; ++j) x[0] = _mm_add_pd(x[0], x[j]);
  return _mm_cvtsd_f64(x[0]);
}

struct Variant {
  const char* isa;
  int chains, bytes;  // register width
  double (*run)(int64_t, float);
  double (*run64)(int64_t, double);
};

Variant widest() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return {"avx512", kChains512, 64, chains_avx512, chains_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"avx2", kChains256, 32, chains_avx2, chains_avx2};
  return {"sse2", kChains128, 16, chains_sse2, chains_sse2};
}

// Seconds of `rounds` rounds.
template <typename T>
double time_rounds(const Variant& v, int64_t rounds) {
  const auto start = std::chrono::steady_clock::now();
  const double sink = std::is_same_v<T, float> ? v.run(rounds, 0.0f) : v.run64(rounds, 0.0);
  benchmark::DoNotOptimize(sink);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

template <typename T>
FmaPeak measure_fma_peak(double seconds) {
  const Variant v = widest();
  const double flops_per_round = 2.0 * v.chains * (v.bytes / static_cast<double>(sizeof(T)));
  // Runs of about 10 ms, the fastest of as many as `seconds` holds (at least 8): a run cut by
  // another process or a clock still ramping up only lowers a figure that is not kept.
  int64_t rounds = 1 << 12;
  while (time_rounds<T>(v, rounds) < 0.01 && rounds < (int64_t{1} << 40)) rounds *= 2;
  double best = 0, spent = 0;
  for (int run = 0; run < 8 || spent < seconds; ++run) {
    const double s = time_rounds<T>(v, rounds);
    spent += s;
    best = std::max(best, flops_per_round * static_cast<double>(rounds) / s);
  }
  return {best, v.isa};
}

template FmaPeak measure_fma_peak<float>(double);
template FmaPeak measure_fma_peak<double>(double);

void register_fma_peak_benchmarks() {
  const std::string isa = widest().isa;
  const auto add = [&](const char* type, auto zero) {
    const std::string name = "fma_peak/cpu/" + std::string(type) + "/" + isa;
    benchmark::RegisterBenchmark(name.c_str(), [zero](benchmark::State& state) {
      FmaPeak peak;
      for (auto _ : state) peak = measure_fma_peak<decltype(zero)>();
      state.counters["TFLOP/s"] = peak.flops_per_second / 1e12;
      state.SetLabel("one core, " + peak.isa + " FMA chains in registers");
    })->Iterations(1)->Unit(benchmark::kMillisecond);
  };
  add("f32", 0.0f);
  add("f64", 0.0);
}

}  // namespace mlps::kernel_bench

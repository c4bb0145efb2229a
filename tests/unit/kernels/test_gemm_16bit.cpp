// Typed mixed precision's GEMM (gemm_16bit): bf16/fp16 operands as stored, fp32 sums, C in 16
// bits or in fp32. It must equal, bit for bit, the emulation it replaces (gemm<float> on the
// same values held in fp32, then round_to_storage of a 16-bit C), on the CPU and on the GPU
// (here the emulated one), which must ask cuBLAS for 16-bit data and CUBLAS_COMPUTE_32F.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/half_types.h"
#include "kernels/kernels.h"
#include "tests/cuda_test_support.h"
#include "tests/half_values.h"
#include "tests/reference_kernels.h"

#ifdef MLPSCALE_CUDA_EMULATE
#include <cublas_v2.h>
#endif

namespace mlps {
namespace {

TEST(HalfTypes, ConvertAsTheStorageRoundingDoes) {
  const std::vector<double> values = ref::random_values(4096, 11, -70000.0, 70000.0);
  for (double v : values) {
    const float x = static_cast<float>(v);
    float bf = x, fp = x;
    cpu::round_to_storage(&bf, 1, 1, 1, StorageFormat::bf16);
    cpu::round_to_storage(&fp, 1, 1, 1, StorageFormat::fp16);
    EXPECT_EQ(to_float(from_float<bf16>(x)), bf) << x;
    EXPECT_EQ(to_float(from_float<fp16>(x)), fp) << x;  // ±inf past 65504, as the rounding
  }
  EXPECT_EQ(format_of<bf16>(), StorageFormat::bf16);
  EXPECT_EQ(format_of<fp16>(), StorageFormat::fp16);
}

// One GEMM's operands: op(A) m × k, op(B) k × n, with padded leading dimensions where asked.
struct Shape {
  bool trans_a, trans_b;
  int64_t m, n, k, pad;
  float beta;
};

using test::typed;
using test::widened;
inline std::vector<float> widened_any(const std::vector<float>& x) { return x; }
template <typename S>
std::vector<float> widened_any(const std::vector<S>& x) { return widened(x); }

// Inputs of a shape, already 16-bit values: A, B and an initial C (read when beta is not 0).
template <typename S>
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<S> a, b, c16;
  std::vector<float> c32;
  explicit Operands(const Shape& s, uint64_t seed) {
    const int64_t a_rows = s.trans_a ? s.k : s.m, a_cols = s.trans_a ? s.m : s.k;
    const int64_t b_rows = s.trans_b ? s.n : s.k, b_cols = s.trans_b ? s.k : s.n;
    lda = a_cols + s.pad, ldb = b_cols + s.pad, ldc = s.n + s.pad;
    const auto values = [&](int64_t count, uint64_t salt) {
      std::vector<float> v(static_cast<size_t>(count));
      const auto r = ref::random_values(v.size(), seed * 7 + salt, -2.0, 2.0);
      for (size_t i = 0; i < v.size(); ++i) v[i] = to_float(from_float<S>(static_cast<float>(r[i])));
      return v;
    };
    a = typed<S>(values(a_rows * lda, 1));
    b = typed<S>(values(b_rows * ldb, 2));
    c32 = values(s.m * ldc, 3);
    c16 = typed<S>(c32);
  }
  // The C the GEMM starts from, in its own type.
  template <typename C>
  std::vector<C> initial_c() const {
    if constexpr (std::is_same_v<C, float>) return c32;
    else return c16;
  }
};

// The emulation's result: gemm<float> on the fp32-held values, then the storage rounding.
template <typename S, typename C>
std::vector<C> emulated(const Shape& s, const Operands<S>& o) {
  std::vector<float> c = widened_any(o.template initial_c<C>());
  cpu::gemm<float>(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.5f, widened(o.a).data(), o.lda,
                   widened(o.b).data(), o.ldb, s.beta, c.data(), o.ldc,
                   std::is_same_v<S, bf16> ? GemmCompute::bf16 : GemmCompute::fp16);
  if constexpr (std::is_same_v<C, float>) {
    return c;
  } else {
    cpu::round_to_storage(c.data(), s.m, s.n, o.ldc, format_of<S>());
    return typed<S>(c);
  }
}

template <typename C>
bool same_bits(const std::vector<C>& x, const std::vector<C>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(C)) == 0;
}

const Shape kShapes[] = {
    {false, true, 7, 5, 9, 0, 0.0f},    {false, false, 7, 5, 9, 3, 1.0f},
    {true, false, 5, 7, 9, 0, 1.0f},    {true, true, 6, 4, 3, 2, 0.0f},
    {false, true, 64, 48, 130, 0, 0.0f}, {true, false, 96, 80, 33, 5, 1.0f},
    {false, true, 4, 6, 0, 0, 1.0f}};

std::string name(const Shape& s, const char* types) {
  return std::string(types) + (s.trans_a ? " T" : " N") + (s.trans_b ? "T" : "N") + " m" +
         std::to_string(s.m) + " n" + std::to_string(s.n) + " k" + std::to_string(s.k) +
         " pad" + std::to_string(s.pad) + " beta" + std::to_string(s.beta);
}

template <typename S, typename C>
void cpu_equals_emulation(const char* types) {
  uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    const Operands<S> o(s, seed++);
    std::vector<C> c = o.template initial_c<C>();
    std::vector<float> scratch(static_cast<size_t>(
        cpu::gemm_16bit_scratch(s.m, s.n, s.k, !std::is_same_v<C, float>)));
    cpu::gemm_16bit<S, C>(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.5f, o.a.data(), o.lda,
                          o.b.data(), o.ldb, s.beta, c.data(), o.ldc, scratch.data());
    EXPECT_TRUE(same_bits(c, emulated<S, C>(s, o))) << name(s, types);
  }
}

TEST(Gemm16bit, CpuEqualsTheEmulatedRoundingBitForBit) {
  cpu_equals_emulation<bf16, bf16>("bf16 -> bf16");
  cpu_equals_emulation<bf16, float>("bf16 -> fp32");
  cpu_equals_emulation<fp16, fp16>("fp16 -> fp16");
  cpu_equals_emulation<fp16, float>("fp16 -> fp32");
}

TEST(Gemm16bit, CpuScratchHoldsBothOperandsAndA16BitResult) {
  EXPECT_EQ(cpu::gemm_16bit_scratch(32, 2048, 8192, true), 32 * 8192 + 8192 * 2048 + 32 * 2048);
  EXPECT_EQ(cpu::gemm_16bit_scratch(32, 2048, 8192, false), 32 * 8192 + 8192 * 2048);
  EXPECT_STREQ(cpu::gemm_16bit_call(StorageFormat::bf16), "cblas_sgemm of bf16 widened to fp32");
}

#ifdef MLPSCALE_WITH_CUDA
template <typename S, typename C>
void gpu_equals_cpu(const char* types) {
  uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    const Operands<S> o(s, seed++);
    cuda_test::GpuArray<S> a(o.a), b(o.b);
    cuda_test::GpuArray<C> gc(o.template initial_c<C>());
#ifdef MLPSCALE_CUDA_EMULATE
    cublasStandinResetCounts();
#endif
    cuda::gemm_16bit<S, C>(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.5f, a.get(), o.lda, b.get(),
                           o.ldb, s.beta, gc.get(), o.ldc, nullptr);
#ifdef MLPSCALE_CUDA_EMULATE
    // The stand-in sums as the CPU does: the same bits.
    EXPECT_TRUE(same_bits(gc.host(), emulated<S, C>(s, o))) << name(s, types);
    const cudaDataType in = std::is_same_v<S, bf16> ? CUDA_R_16BF : CUDA_R_16F;
    const cudaDataType out = std::is_same_v<C, float> ? CUDA_R_32F : in;
    EXPECT_EQ(cublasStandinGemmCalls(in, out, CUBLAS_COMPUTE_32F), 1) << name(s, types);
    EXPECT_EQ(cublasStandinGemmCallsTotal(), 1) << name(s, types);
#else
    // Tensor cores sum in their own order: within a rounding of the output.
    const std::vector<float> got = widened_any(gc.host());
    const std::vector<float> want = widened_any(emulated<S, C>(s, o));
    EXPECT_TRUE(ref::all_close(ref::Vec(got.begin(), got.end()), ref::Vec(want.begin(), want.end()),
                               std::is_same_v<C, float> ? 1e-5 : 1e-2, name(s, types)));
#endif
  }
}
#endif

TEST(Gemm16bit, GpuCallsCublasWith16BitDataAndEqualsTheCpu) {
  MLPS_REQUIRE_GPU("gemm_16bit");
#ifdef MLPSCALE_WITH_CUDA
  gpu_equals_cpu<bf16, bf16>("bf16 -> bf16");
  gpu_equals_cpu<bf16, float>("bf16 -> fp32");
  gpu_equals_cpu<fp16, fp16>("fp16 -> fp16");
  gpu_equals_cpu<fp16, float>("fp16 -> fp32");
  EXPECT_EQ(cuda::gemm_16bit_scratch(32, 2048, 8192, true), 0);
  EXPECT_STREQ(cuda::gemm_16bit_call(StorageFormat::fp16),
               "cublasGemmEx(CUDA_R_16F, CUBLAS_COMPUTE_32F)");
#endif
}

}  // namespace
}  // namespace mlps

// What a GEMM asks the hardware to multiply in (GemmCompute): TF32 rounding on the CPU twin (the
// reference of --verify for a --math tf32 run), the run's math from its options, and, in the
// emulated-GPU build, what every GEMM of a training step asks cuBLAS for: the cuBLAS stand-in
// counts cublasGemmEx calls by types and checks cuBLAS's type combinations, so a wrong data or
// compute type in kernels/cuda/gemm_cuda.cu fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/float16_bits.h"
#include "kernels/kernels.h"
#include "src/data/dataset.h"
#include "src/data/shuffle.h"
#include "src/options/options.h"
#include "src/schemes/serial/serial_trainer.h"
#include "tests/model_shapes.h"

#ifdef MLPSCALE_CUDA_EMULATE
#include <cublas_v2.h>
#endif

namespace mlps {
namespace {

TEST(GemmCompute, Tf32KeepsTenMantissaBitsRoundingToNearestEven) {
  EXPECT_EQ(cpu::round_to_tf32(1.0f + 0x1p-10f), 1.0f + 0x1p-10f);      // representable
  EXPECT_EQ(cpu::round_to_tf32(1.0f + 0x1p-11f), 1.0f);                 // tie: to even
  EXPECT_EQ(cpu::round_to_tf32(1.0f + 0x3p-11f), 1.0f + 0x2p-10f);      // tie: to even (up)
  EXPECT_EQ(cpu::round_to_tf32(1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);  // past the tie
  EXPECT_EQ(cpu::round_to_tf32(-3.0f), -3.0f);
  EXPECT_EQ(cpu::round_to_tf32(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(cpu::round_to_tf32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(cpu::round_to_tf32(std::numeric_limits<float>::max()),
            std::numeric_limits<float>::infinity());  // rounds past the largest float
}

TEST(GemmCompute, CpuTf32GemmRoundsItsInputsAndOnlyWhenAsked) {
  // [1 + 2^-12] · [1 + 2^-12]: exact in fp32 up to 2^-24; TF32 drops the 2^-12 of each input.
  const std::vector<float> a{1.0f + 0x1p-12f}, b{1.0f + 0x1p-12f};
  float c_fp32 = 0, c_tf32 = 0, c_bf16 = 0;
  cpu::gemm<float>(false, false, 1, 1, 1, 1.0f, a.data(), 1, b.data(), 1, 0.0f, &c_fp32, 1);
  cpu::gemm<float>(false, false, 1, 1, 1, 1.0f, a.data(), 1, b.data(), 1, 0.0f, &c_tf32, 1,
                   GemmCompute::tf32);
  // Mixed precision's inputs hold 16-bit values already: the CPU multiplies them as they are.
  cpu::gemm<float>(false, false, 1, 1, 1, 1.0f, a.data(), 1, b.data(), 1, 0.0f, &c_bf16, 1,
                   GemmCompute::bf16);
  EXPECT_EQ(c_fp32, (1.0f + 0x1p-12f) * (1.0f + 0x1p-12f));
  EXPECT_EQ(c_tf32, 1.0f);
  EXPECT_EQ(c_bf16, c_fp32);
  EXPECT_EQ(a[0], 1.0f + 0x1p-12f);  // the caller's inputs are untouched
}

TEST(GemmCompute, ARunsMathFollowsItsPrecisionAndMathOption) {
  EXPECT_EQ(gemm_compute(Precision::fp32, GemmCompute::fp32), GemmCompute::fp32);
  EXPECT_EQ(gemm_compute(Precision::fp32, GemmCompute::tf32), GemmCompute::tf32);
  EXPECT_EQ(gemm_compute(Precision::bf16, GemmCompute::fp32), GemmCompute::bf16);
  EXPECT_EQ(gemm_compute(Precision::fp16, GemmCompute::fp32), GemmCompute::fp16);
  EXPECT_EQ(gemm_compute(Precision::fp64, GemmCompute::fp32), GemmCompute::fp32);
  EXPECT_EQ(Device(DeviceConfig(DeviceKind::cpu, StorageFormat::bf16)).gemm_compute(),
            GemmCompute::bf16);
  EXPECT_EQ(Device(DeviceConfig(DeviceKind::cpu, StorageFormat::full, false, GemmCompute::tf32))
                .gemm_compute(),
            GemmCompute::tf32);
}

#ifdef MLPSCALE_CUDA_EMULATE

// One training step of a small model on the emulated GPU; the stand-in's counts are reset first.
void train_one_step_on_the_gpu(StorageFormat storage, GemmCompute math) {
  const auto data = open_dataset("synthetic", 3);
  SerialTrainer<float> trainer(DeviceConfig(DeviceKind::cuda, storage, false, math),
                               model_shape(6, 16, 3, 2), OptimizerConfig{}, 3, 8);
  PhaseTimer timer(trainer.device());
  const auto order = epoch_order(data->size(Split::train), 3, 0);
  const HostBatch batch = load_batch(*data, Split::train, order, 0, 8, 6);
  cublasStandinResetCounts();
  timer.begin_iteration();
  trainer.train_step(batch, 8, timer);
  timer.end_iteration();
}

struct StepCase {
  StorageFormat storage;
  GemmCompute math;
  cublasComputeType_t expected;
  const char* what;
};

TEST(GemmCompute, EveryGemmOfAStepAsksCublasForTheRunsMath) {
  for (const StepCase& c :
       {StepCase{StorageFormat::bf16, GemmCompute::fp32, CUBLAS_COMPUTE_32F_FAST_16BF, "bf16"},
        StepCase{StorageFormat::fp16, GemmCompute::fp32, CUBLAS_COMPUTE_32F_FAST_16F, "fp16"},
        StepCase{StorageFormat::full, GemmCompute::fp32, CUBLAS_COMPUTE_32F, "fp32"},
        StepCase{StorageFormat::full, GemmCompute::tf32, CUBLAS_COMPUTE_32F_FAST_TF32, "tf32"}}) {
    train_one_step_on_the_gpu(c.storage, c.math);
    const int64_t total = cublasStandinGemmCallsTotal();
    // 3 blocks of 2 Linears plus the input and output Linears: 8 forward, 15 backward GEMMs
    // (the first Linear computes no input gradient).
    EXPECT_EQ(total, 23) << c.what;
    EXPECT_EQ(cublasStandinGemmCalls(CUDA_R_32F, CUDA_R_32F, c.expected), total) << c.what;
    if (c.storage != StorageFormat::full) {  // mixed precision's inputs are 16-bit values
      EXPECT_EQ(cublasStandinRoundedInputs(), 0) << c.what << ": a GEMM input was not rounded";
    }
  }
}

TEST(GemmCompute, Fp64StepsAskForExactDoubleGemms) {
  const auto data = open_dataset("synthetic", 3);
  SerialTrainer<double> trainer(DeviceConfig(DeviceKind::cuda), model_shape(6, 16, 3, 2),
                                OptimizerConfig{}, 3, 8);
  PhaseTimer timer(trainer.device());
  const HostBatch batch = load_batch_range(*data, Split::train, 0, 8, 6);
  cublasStandinResetCounts();
  timer.begin_iteration();
  trainer.train_step(batch, 8, timer);
  timer.end_iteration();
  EXPECT_GT(cublasStandinGemmCallsTotal(), 0);
  EXPECT_EQ(cublasStandinGemmCalls(CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F),
            cublasStandinGemmCallsTotal());
}

TEST(GemmCompute, StandinRefusesTypeCombinationsCublasRefuses) {
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  float a = 1, b = 1, c = 0, one = 1, zero = 0;
  double d = 0, one_d = 1, zero_d = 0;
  const auto call = [&](cudaDataType ab, cudaDataType ct, cublasComputeType_t compute, void* cp,
                        const void* alpha, const void* beta) {
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, alpha, &a, ab, 1, &b, ab, 1, beta,
                        cp, ct, 1, compute, CUBLAS_GEMM_DEFAULT);
  };
  // The tensor-core computes take fp32 operands only; 16-bit data goes with CUBLAS_COMPUTE_32F.
  EXPECT_EQ(call(CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, &c, &one, &zero),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_64F, &c, &one_d, &zero_d),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_32F, &d, &one, &zero),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(call(CUDA_R_16BF, CUDA_R_16F, CUBLAS_COMPUTE_32F, &c, &one, &zero),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &a, CUDA_R_32F, 1, &b,
                         CUDA_R_16F, 1, &zero, &c, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_SUPPORTED);  // A and B of different types
  EXPECT_EQ(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
}

TEST(GemmCompute, StandinMultiplies16BitInputsInFp32) {
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  // Column-major 2×2 A = [1 2; 3 4] and B = [0.5 −1; 2 0.25] as bf16 bits; C = A·B.
  const std::vector<float> a{1, 3, 2, 4}, b{0.5f, 2, -1, 0.25f};
  std::vector<uint16_t> a16, b16;
  for (float v : a) a16.push_back(cpu::float_to_bf16_bits(v));
  for (float v : b) b16.push_back(cpu::float_to_bf16_bits(v));
  std::vector<float> c(4, 0.0f);
  std::vector<uint16_t> c16(4, 0);
  const float one = 1, zero = 0;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a16.data(), CUDA_R_16BF, 2,
                         b16.data(), CUDA_R_16BF, 2, &zero, c.data(), CUDA_R_32F, 2,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, a16.data(), CUDA_R_16BF, 2,
                         b16.data(), CUDA_R_16BF, 2, &zero, c16.data(), CUDA_R_16BF, 2,
                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  const std::vector<float> expected{1 * 0.5f + 2 * 2, 3 * 0.5f + 4 * 2, 1 * -1 + 2 * 0.25f,
                                    3 * -1 + 4 * 0.25f};
  EXPECT_EQ(c, expected);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(cpu::bf16_bits_to_float(c16[i]), expected[i]) << i;
  EXPECT_EQ(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
}

#else

TEST(GemmCompute, EveryGemmOfAStepAsksCublasForTheRunsMath) {
  GTEST_SKIP() << "the cuBLAS stand-in that counts GEMMs by type exists only in the emulated-GPU "
                  "build (make CUDA=emulate), where this test runs";
}

#endif  // MLPSCALE_CUDA_EMULATE

}  // namespace
}  // namespace mlps

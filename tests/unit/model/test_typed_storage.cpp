// Typed mixed precision (bf16/fp16 tensors in 16-bit buffers) against the emulation it replaces
// (fp32 buffers holding rounded values): serial training must give the same loss curve and the
// same final weights, bit for bit, in less memory.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/half_types.h"
#include "src/data/dataset.h"
#include "src/data/shuffle.h"
#include "src/schemes/serial/serial_trainer.h"
#include "tests/cuda_test_support.h"
#include "tests/model_shapes.h"

#ifdef MLPSCALE_CUDA_EMULATE
#include <cublas_v2.h>
#endif

namespace mlps {
namespace {

struct Trained {
  std::vector<double> losses;
  std::vector<NamedTensor> parameters;
  size_t peak_bytes = 0;
  std::string storage, gemm_call;
};

// Six steps of serial training on T (float: the emulation of `storage`; bf16/fp16: typed).
template <typename T>
Trained train(const ModelConfig& model, StorageFormat storage, OptimizerKind kind,
              DeviceKind device = DeviceKind::cpu, int64_t steps = 6) {
  const auto data = open_dataset("synthetic", 7);
  OptimizerConfig optimizer;
  optimizer.kind = kind;
  optimizer.lr = kind == OptimizerKind::sgd ? 0.05 : 1e-3;
  SerialTrainer<T> trainer(DeviceConfig(device, storage), model, optimizer, 7, 8);
  PhaseTimer timer(trainer.device());
  Trained out;
  const auto order = epoch_order(data->size(Split::train), 7, 0);
  for (int64_t it = 0; it < steps; ++it) {
    timer.begin_iteration();
    const HostBatch batch =
        load_batch(*data, Split::train, order, it * 8, 8, static_cast<int>(model.image_size));
    trainer.train_step(batch, 8, timer);
    out.losses.push_back(trainer.step_loss());
    timer.end_iteration();
  }
  out.parameters = trainer.gather_parameters();
  out.peak_bytes = trainer.device().peak_bytes();
  out.storage = trainer.storage();
  out.gemm_call = trainer.gemm_call();
  return out;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

template <typename S>
void typed_equals_emulated(const ModelConfig& model, OptimizerKind kind, const std::string& what) {
  const StorageFormat format = format_of<S>();
  const Trained emulated = train<float>(model, format, kind);
  const Trained typed = train<S>(model, format, kind);
  EXPECT_EQ(emulated.storage, "emulated");
  EXPECT_EQ(typed.storage, "typed");
  EXPECT_EQ(typed.gemm_call, std::string("cblas_sgemm of ") +
                                (format == StorageFormat::bf16 ? "bf16" : "fp16") +
                                " widened to fp32");
  EXPECT_TRUE(same_bits(typed.losses, emulated.losses)) << what << ": loss curves differ";
  ASSERT_EQ(typed.parameters.size(), emulated.parameters.size());
  for (size_t t = 0; t < typed.parameters.size(); ++t)
    EXPECT_TRUE(same_bits(typed.parameters[t].values, emulated.parameters[t].values))
        << what << ": final " << typed.parameters[t].name << " differs";
  // 16-bit activations and weights, fp32 gradients and optimizer state: less than the emulation,
  // whose every tensor is fp32.
  EXPECT_LT(typed.peak_bytes, emulated.peak_bytes) << what;
}

TEST(TypedStorage, SerialTrainingEqualsTheEmulationBitForBit) {
  ModelConfig mlp = model_shape(6, 16, 3, 2);
  typed_equals_emulated<bf16>(mlp, OptimizerKind::adam, "bf16 adam");
  typed_equals_emulated<fp16>(mlp, OptimizerKind::adam, "fp16 adam (loss scaling)");
  typed_equals_emulated<bf16>(mlp, OptimizerKind::sgd, "bf16 sgd");
  ModelConfig checkpointed = mlp;
  checkpointed.checkpoint_activations = true;
  typed_equals_emulated<bf16>(checkpointed, OptimizerKind::adam, "bf16 checkpointed");
  typed_equals_emulated<fp16>(model_shape(6, 16, 2, 1, BlockKind::plain), OptimizerKind::adam,
                              "fp16 plain blocks");
}

// On the GPU every GEMM of a typed step is cublasGemmEx on 16-bit operands with fp32 compute:
// an activation's (forward, dx) with a 16-bit C, a weight gradient's with an fp32 C.
TEST(TypedStorage, EveryGemmOfAStepIsA16BitTensorCoreCall) {
  MLPS_REQUIRE_GPU("gemm_16bit in a training step");
#ifdef MLPSCALE_CUDA_EMULATE
  const ModelConfig model = model_shape(6, 16, 3, 2);  // embed, 3 × (fc1, fc2), classifier
  const int64_t linears = 1 + 3 * 2 + 1;
  cublasStandinResetCounts();
  const Trained typed = train<bf16>(model, StorageFormat::bf16, OptimizerKind::adam,
                                    DeviceKind::cuda, 1);
  EXPECT_EQ(typed.gemm_call, "cublasGemmEx(CUDA_R_16BF, CUBLAS_COMPUTE_32F)");
  // Forward of every Linear and dx of all but the embed; dW of every Linear.
  EXPECT_EQ(cublasStandinGemmCalls(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F),
            2 * linears - 1);
  EXPECT_EQ(cublasStandinGemmCalls(CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F), linears);
  EXPECT_EQ(cublasStandinGemmCallsTotal(), 3 * linears - 1);  // nothing else
  EXPECT_EQ(cublasStandinRoundedInputs(), 0);  // every operand was a bf16 value already
#else
  GTEST_SKIP() << "the cuBLAS call counts come from the emulated GPU build's stand-in";
#endif
}

// The emulated GPU trains typed storage as the emulation there does, bit for bit.
TEST(TypedStorage, GpuSerialTrainingEqualsTheEmulationBitForBit) {
  MLPS_REQUIRE_GPU("typed serial training");
  const ModelConfig model = model_shape(6, 16, 2, 2);
  const Trained emulated =
      train<float>(model, StorageFormat::fp16, OptimizerKind::adam, DeviceKind::cuda);
  const Trained typed =
      train<fp16>(model, StorageFormat::fp16, OptimizerKind::adam, DeviceKind::cuda);
#ifdef MLPSCALE_CUDA_EMULATE  // the stand-in sums as the CPU does
  EXPECT_TRUE(same_bits(typed.losses, emulated.losses));
  for (size_t t = 0; t < typed.parameters.size(); ++t)
    EXPECT_TRUE(same_bits(typed.parameters[t].values, emulated.parameters[t].values))
        << typed.parameters[t].name;
#else  // tensor cores sum in their own order: close, not equal
  for (size_t i = 0; i < typed.losses.size(); ++i)
    EXPECT_NEAR(typed.losses[i], emulated.losses[i], 1e-2 * emulated.losses[i]);
#endif
  EXPECT_LT(typed.peak_bytes, emulated.peak_bytes);
}

}  // namespace
}  // namespace mlps

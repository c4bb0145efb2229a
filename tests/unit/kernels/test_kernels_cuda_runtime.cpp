// The CUDA optimizer kernels against their CPU twins, and the CUDA runtime seam: memory,
// events, the overlaps every kernel refuses, availability queries. Without a GPU, or in a build
// without CUDA, every test here is skipped visibly, naming the kernel it did not check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "tests/cuda_test_support.h"
#include "tests/reference_kernels.h"

#ifdef MLPSCALE_WITH_CUDA
#include <cuda_runtime.h>  // cudaGetDevice: which GPU the version string must name
#endif

namespace mlps {
namespace {

template <typename T>
class CudaOptimizerKernelsTest : public ref::KernelTest<T> {};
TYPED_TEST_SUITE(CudaOptimizerKernelsTest, ref::KernelTypes);

#ifdef MLPSCALE_WITH_CUDA
using namespace cuda_test;
#endif

TYPED_TEST(CudaOptimizerKernelsTest, AdamUpdate) {
  MLPS_REQUIRE_GPU("adam_update");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t n = 100001;
  std::vector<T> param = random_t<T>(n, 50), m = random_t<T>(n, 51, -0.1, 0.1),
                 v = random_t<T>(n, 52, 0.0, 0.01);
  GpuArray<T> param_d(param), m_d(m), v_d(v);
  AdamStep step;
  step.lr = 0.05;
  for (int t = 1; t <= 3; ++t) {
    step.bias_correction1 = 1.0 - std::pow(step.beta1, t);
    step.bias_correction2 = 1.0 - std::pow(step.beta2, t);
    std::vector<T> grad = random_t<T>(n, 60 + t);
    GpuArray<T> grad_d(grad);
    // The last step zeroes the GPU's gradient as it goes: the update must not change.
    const auto after = t == 3 ? GradAfterUpdate::zeroed : GradAfterUpdate::kept;
    cuda::adam_update<T>(param_d.get(), grad_d.get(), m_d.get(), v_d.get(), n, step, after);
    cpu::adam_update<T>(param.data(), grad.data(), m.data(), v.data(), n, step);
    EXPECT_EQ(grad_d.host(), t == 3 ? std::vector<T>(n, T(0)) : grad) << "step " << t;
  }
  EXPECT_TRUE(matches_cpu(param_d.host(), param, "param"));
  EXPECT_TRUE(matches_cpu(m_d.host(), m, "m"));
  EXPECT_TRUE(matches_cpu(v_d.host(), v, "v"));
#endif
}

TYPED_TEST(CudaOptimizerKernelsTest, SgdUpdate) {
  MLPS_REQUIRE_GPU("sgd_update");
#ifdef MLPSCALE_WITH_CUDA
  using T = TypeParam;
  const int64_t n = 100001;
  std::vector<T> param = random_t<T>(n, 70);
  std::vector<T> grad = random_t<T>(n, 71);
  GpuArray<T> param_d(param), grad_d(grad);
  cuda::sgd_update<T>(param_d.get(), grad_d.get(), n, 0.1, GradAfterUpdate::zeroed);
  cpu::sgd_update<T>(param.data(), grad.data(), n, 0.1);
  EXPECT_TRUE(matches_cpu(param_d.host(), param, "param"));
  EXPECT_EQ(grad_d.host(), std::vector<T>(n, T(0)));
#endif
}

TEST(CudaKernelsMemory, CopiesAndFillZeroRoundTrip) {
  MLPS_REQUIRE_GPU("device_alloc/copy_*/fill_zero");
#ifdef MLPSCALE_WITH_CUDA
  const size_t n = 100003, bytes = n * sizeof(double);
  std::vector<double> host(n), back(n, -1.0);
  for (size_t i = 0; i < n; ++i) host[i] = 0.25 * static_cast<double>(i) - 7.0;
  void* a = cuda::device_alloc(bytes);
  void* b = cuda::device_alloc(bytes);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  cuda::copy_to_device(a, host.data(), bytes);
  cuda::copy_on_device(b, a, bytes);
  cuda::fill_zero(a, bytes);
  cuda::synchronize();
  cuda::copy_to_host(back.data(), b, bytes);
  EXPECT_EQ(back, host);
  cuda::copy_to_host(back.data(), a, bytes);
  EXPECT_EQ(back, std::vector<double>(n, 0.0));
  cuda::device_free(a);
  cuda::device_free(b);
  EXPECT_EQ(cuda::device_alloc(0), nullptr);
#endif
}

TEST(CudaKernelsEvents, ElapsedTimeCoversWorkBetweenEvents) {
  MLPS_REQUIRE_GPU("event_*");
#ifdef MLPSCALE_WITH_CUDA
  using T = float;
  const int64_t n = 1 << 22;
  GpuArray<T> x(std::vector<T>(n, T(-1))), y(std::vector<T>(n, T(0)));
  void* start = cuda::event_create();
  void* end = cuda::event_create();
  cuda::event_record(start);
  for (int i = 0; i < 10; ++i) cuda::relu_forward<T>(y.get(), x.get(), n);
  cuda::event_record(end);
  const double seconds = cuda::event_elapsed_seconds(start, end);
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 10.0);
  cuda::event_destroy(start);
  cuda::event_destroy(end);
#endif
}

// cudaMemcpy between overlapping ranges is undefined and layernorm_backward's dgamma/dbeta pass
// reads dy and x after dx is written: both twins refuse such calls (kernels/aliasing.h).
TEST(CudaKernelsAliasing, OverlapsTheGpuCannotHonourAreRefused) {
  MLPS_REQUIRE_GPU("copy_on_device/layernorm_backward aliasing checks");
#ifdef MLPSCALE_WITH_CUDA
  GpuArray<double> buf(std::vector<double>(64, 1.0));
  GpuArray<double> stats(std::vector<double>(8, 1.0));
  GpuArray<double> params(std::vector<double>(8, 1.0));
  GpuArray<double> dx(std::vector<double>(32, 0.0));
  double* d = buf.get();
  EXPECT_THROW(cuda::copy_on_device(d + 1, d, 16 * sizeof(double)), std::invalid_argument);
  EXPECT_NO_THROW(cuda::copy_on_device(d + 16, d, 16 * sizeof(double)));
  EXPECT_THROW(cuda::layernorm_backward<double>(d, params.get(), params.get(), d, d + 32,
                                                stats.get(), stats.get(), params.get(), 4, 8,
                                                false),
               std::invalid_argument);
  EXPECT_THROW(cuda::layernorm_backward<double>(d + 4, params.get(), params.get(), d + 32, d,
                                                stats.get(), stats.get(), params.get(), 4, 8,
                                                false),
               std::invalid_argument);
  EXPECT_NO_THROW(cuda::layernorm_backward<double>(dx.get(), params.get(), params.get(), d,
                                                   d + 32, stats.get(), stats.get(),
                                                   params.get(), 4, 8, false));
  cuda::synchronize();
#endif
}

// Runs in every CUDA build, with or without a GPU: the queries must answer, never crash.
TEST(CudaRuntime, AvailabilityAndVersionQueriesNeverThrow) {
#ifdef MLPSCALE_WITH_CUDA
  bool available = false;
  EXPECT_NO_THROW(available = cuda::gpu_available());
  EXPECT_EQ(available, cuda::gpu_available());
  const std::string version = cuda::runtime_version_string();
  EXPECT_NE(version.find("CUDA runtime"), std::string::npos) << version;
  EXPECT_EQ(version.find("no device") == std::string::npos, available) << version;
  if (available) {  // names the GPU this thread is bound to
    int device = -1;
    ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
    EXPECT_NE(version.find("device " + std::to_string(device) + ": "), std::string::npos)
        << version;
  }
#else
  GTEST_SKIP() << "no GPU: CUDA kernel gpu_available/runtime_version_string not checked "
                  "(built without CUDA)";
#endif
}

}  // namespace
}  // namespace mlps

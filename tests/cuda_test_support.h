#pragma once
// What the CUDA tests share: the visible skip without a GPU, and (with CUDA) an owning device
// array, seeded random inputs and the comparison with a CPU twin's result.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tests/reference_kernels.h"

#ifdef MLPSCALE_WITH_CUDA
#define MLPS_REQUIRE_GPU(kernel) \
  if (!::mlps::cuda::gpu_available()) GTEST_SKIP() << "no GPU: CUDA kernel " kernel " not checked"
#else
#define MLPS_REQUIRE_GPU(kernel) \
  GTEST_SKIP() << "no GPU: CUDA kernel " kernel " not checked (built without CUDA)"
#endif

#ifdef MLPSCALE_WITH_CUDA
namespace mlps::cuda_test {

// Owning device array for the tests, filled from and read back to host vectors.
template <typename T>
class GpuArray {
 public:
  explicit GpuArray(const std::vector<T>& host)
      : count_(host.size()), data_(static_cast<T*>(cuda::device_alloc(bytes()))) {
    cuda::copy_to_device(data_, host.data(), bytes());
  }
  GpuArray(const GpuArray&) = delete;
  GpuArray& operator=(const GpuArray&) = delete;
  ~GpuArray() { cuda::device_free(data_); }
  T* get() { return data_; }
  std::vector<T> host() const {
    std::vector<T> out(count_);
    cuda::copy_to_host(out.data(), data_, bytes());
    return out;
  }

 private:
  size_t bytes() const { return count_ * sizeof(T); }
  size_t count_;
  T* data_;
};

template <typename T>
std::vector<T> random_t(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return ref::cast_to<T>(ref::random_values(n, seed, lo, hi));
}

// CUDA result against the CPU twin's result.
template <typename T>
::testing::AssertionResult matches_cpu(const std::vector<T>& gpu, const std::vector<T>& cpu,
                                       const std::string& what, double tol = ref::tolerance<T>()) {
  return ref::all_close(ref::to_double(gpu), ref::to_double(cpu), tol, what);
}

}  // namespace mlps::cuda_test
#endif  // MLPSCALE_WITH_CUDA

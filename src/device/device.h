#pragma once
// The Device seam: one object per rank that owns the backend choice, counts the bytes it
// allocates (peak memory for the results) and forwards every kernel to mlps::cpu or mlps::cuda.
#include <cstddef>
#include <string>
#include <type_traits>

#include "kernels/kernels.h"
#include "kernels/stored_values.h"

#ifdef MLPSCALE_WITH_CUDA
#define MLPS_ON_BACKEND(fn, ...) \
  (kind_ == DeviceKind::cuda ? cuda::fn(__VA_ARGS__) : cpu::fn(__VA_ARGS__))
#else
#define MLPS_ON_BACKEND(fn, ...) cpu::fn(__VA_ARGS__)
#endif

namespace mlps {

enum class DeviceKind { cpu, cuda };

inline const char* to_string(DeviceKind kind) {
  return kind == DeviceKind::cuda ? "cuda" : "cpu";
}

// Resolves --device auto|cpu|cuda: auto is cuda when built with CUDA and a GPU is visible,
// else cpu. Throws InputError when cuda is asked for and cannot be had, saying why.
DeviceKind resolve_device(const std::string& requested);

// Which traffic a communicator carries: with --fp32-grad-comm, weight gradients stay fp32 on the
// wire while activations travel in the storage format.
enum class CommRole { activations, weight_gradients };

// How a rank computes: the backend, the storage format of its tensors (bf16/fp16 for mixed
// precision, from --precision), whether weight gradients travel in fp32 (--fp32-grad-comm) and
// the math of fp32 GEMMs (--math). Passed explicitly from the options to every Device (a
// DeviceKind alone means full storage and true fp32).
struct DeviceConfig {
  DeviceConfig(DeviceKind kind, StorageFormat storage = StorageFormat::full,
               bool fp32_gradient_wire = false, GemmCompute math = GemmCompute::fp32)
      : kind(kind), storage(storage), fp32_gradient_wire(fp32_gradient_wire), math(math) {}
  DeviceKind kind;
  StorageFormat storage;
  bool fp32_gradient_wire;
  GemmCompute math;  // fp32 or tf32; mixed precision's GEMMs multiply in its 16-bit format
};

// Mixed precision comes two ways. Emulated (bf16/fp16 storage with T = float): every wrapper
// below whose kernel produces activations or their gradients rounds its output to 16 bits
// (parameters' gradients stay fp32, as typed storage keeps them); fp32 accumulation inside
// each kernel, the loss (softmax forward) in fp32, optimizer and master weights untouched (see
// Optimizer). Typed (T = bf16 or fp16, kernels/half_types.h): the kernels read and write 16-bit
// tensors themselves and keep what Acc<T> names in fp32, so nothing is rounded afterwards; the
// GEMMs go through gemm_16bit (cublasGemmEx on the GPU), whose CPU widening scratch is the
// Device's own: allocated on the first GEMM that needs it (grown by a larger one), counted in
// the peak, and freed with the Device.
class Device {
 public:
  explicit Device(const DeviceConfig& config)
      : kind_(config.kind), storage_(config.storage),
        fp32_gradient_wire_(config.fp32_gradient_wire),
        gemm_compute_(mlps::gemm_compute(config.storage, config.math)) {}
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() { release(gemm_scratch_, gemm_scratch_bytes_); }

  DeviceKind kind() const { return kind_; }
  StorageFormat storage_format() const { return storage_; }
  // What float GEMMs multiply in (double GEMMs are exact whatever it says).
  GemmCompute gemm_compute() const { return gemm_compute_; }
  // The library call of this device's GEMMs in float, or in double when fp64.
  const char* gemm_call(bool fp64) const {
    return MLPS_ON_BACKEND(gemm_call, gemm_compute_, fp64);
  }
  // The library call of typed mixed precision's GEMMs (gemm_16bit) on this device.
  const char* gemm_16bit_call() const { return MLPS_ON_BACKEND(gemm_16bit_call, storage_); }
  // The format a communicator of this role carries float payloads in.
  StorageFormat wire_format(CommRole role) const {
    return role == CommRole::weight_gradients && fp32_gradient_wire_ ? StorageFormat::full
                                                                     : storage_;
  }
  // fp16 dynamic loss scaling: softmax_xent_backward multiplies the loss gradient by it.
  double loss_scale() const { return loss_scale_; }
  void set_loss_scale(double scale) { loss_scale_ = scale; }

  // Rounds rows × cols (row stride ld) to the storage format; no-op for full storage or double.
  template <typename T>
  void round_to_storage(T* x, int64_t rows, int64_t cols, int64_t ld) const {
    if constexpr (std::is_same_v<T, float>) {
      if (storage_ != StorageFormat::full)
        MLPS_ON_BACKEND(round_to_storage, x, rows, cols, ld, storage_);
    } else {
      (void)x, (void)rows, (void)cols, (void)ld;
    }
  }
  template <typename T>
  void round_to_storage(T* x, int64_t n) const { round_to_storage(x, 1, n, n); }
  template <typename T>
  void add_nonfinite_count(uint64_t* total, const T* x, int64_t n) const {
    MLPS_ON_BACKEND(add_nonfinite_count, total, x, n);
  }

  void* allocate(size_t bytes) { return allocate_counted(bytes); }
  void release(void* p, size_t bytes) { release_counted(p, bytes); }
  size_t current_bytes() const { return current_bytes_; }
  size_t peak_bytes() const { return peak_bytes_; }
  // Allocations and frees through this Device so far, on every backend: a steady-state step
  // makes none (PhaseTimer counts them per step).
  int64_t allocations() const { return allocations_; }
  int64_t frees() const { return frees_; }

  void to_device(void* dst, const void* host_src, size_t bytes) const {
    MLPS_ON_BACKEND(copy_to_device, dst, host_src, bytes);
  }
  void to_host(void* host_dst, const void* src, size_t bytes) const {
    MLPS_ON_BACKEND(copy_to_host, host_dst, src, bytes);
  }
  // Host staging (pinned on CUDA; HostBuffer) and the copies through it that the host does not
  // wait for: complete once the device is next synchronised. Its allocations and frees count
  // as the device memory's do, as a step must make none of them either.
  void* host_allocate(size_t bytes) {
    ++allocations_;
    return MLPS_ON_BACKEND(host_staging_alloc, bytes);
  }
  void host_release(void* p) {
    if (!p) return;
    ++frees_;
    MLPS_ON_BACKEND(host_staging_free, p);
  }
  void to_device_queued(void* dst, const void* staging_src, size_t bytes) const {
    MLPS_ON_BACKEND(copy_to_device_queued, dst, staging_src, bytes);
  }
  void to_host_queued(void* staging_dst, const void* src, size_t bytes) const {
    MLPS_ON_BACKEND(copy_to_host_queued, staging_dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) const {
    MLPS_ON_BACKEND(copy_on_device, dst, src, bytes);
  }
  void zero(void* p, size_t bytes) const { MLPS_ON_BACKEND(fill_zero, p, bytes); }
  void synchronize() const { MLPS_ON_BACKEND(synchronize); }

  // C = alpha·op(A)·op(B) + beta·C on tensors stored as T, C an activation or its gradient.
  // float or double: gemm<T>, C rounded afterwards when emulating. bf16 or fp16: gemm_16bit.
  template <typename T>
  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, Acc<T> alpha,
            const T* a, int64_t lda, const T* b, int64_t ldb, Acc<T> beta, T* c,
            int64_t ldc) const {
    gemm_into(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, false);
  }
  // The same GEMM into a parameter's gradient, which mixed precision keeps in fp32: typed
  // storage's C is float; the emulation leaves it unrounded, to match.
  template <typename T>
  void gemm_gradient(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, Acc<T> alpha,
                     const T* a, int64_t lda, const T* b, int64_t ldb, Acc<T> beta, Acc<T>* c,
                     int64_t ldc) const {
    gemm_into(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, true);
  }
  template <typename T>
  void bias_add(T* y, const T* bias, int64_t rows, int64_t cols) const {
    MLPS_ON_BACKEND(bias_add, y, bias, rows, cols);
    round_to_storage(y, rows * cols);
  }
  template <typename T>
  void bias_grad(Acc<T>* dbias, const T* dy, int64_t rows, int64_t cols, bool accumulate) const {
    MLPS_ON_BACKEND(bias_grad, dbias, dy, rows, cols, accumulate);  // a parameter's: fp32
  }
  template <typename T>
  void relu_forward(T* y, const T* x, int64_t n) const {
    MLPS_ON_BACKEND(relu_forward, y, x, n);  // selects 16-bit values: nothing to round
  }
  template <typename T>
  void relu_backward(T* dx, const T* dy, const T* y, int64_t n) const {
    MLPS_ON_BACKEND(relu_backward, dx, dy, y, n);  // selects 16-bit values: nothing to round
  }
  template <typename T>
  void residual_add(T* y, const T* a, const T* b, int64_t n) const {
    MLPS_ON_BACKEND(residual_add, y, a, b, n);
    round_to_storage(y, n);
  }
  template <typename T>
  void layernorm_forward(T* y, Acc<T>* mean, Acc<T>* rstd, const T* x, const T* gamma,
                         const T* beta, int64_t rows, int64_t cols, double eps) const {
    MLPS_ON_BACKEND(layernorm_forward, y, mean, rstd, x, gamma, beta, rows, cols, eps);
    round_to_storage(y, rows * cols);  // mean and rstd stay fp32, as the backward reads them
  }
  template <typename T>
  void layernorm_backward(T* dx, Acc<T>* dgamma, Acc<T>* dbeta, const T* dy, const T* x,
                          const Acc<T>* mean, const Acc<T>* rstd, const T* gamma, int64_t rows,
                          int64_t cols, bool accumulate) const {
    MLPS_ON_BACKEND(layernorm_backward, dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, cols,
                    accumulate);
    round_to_storage(dx, rows * cols);  // dgamma and dbeta are a parameter's: kept in fp32
  }
  template <typename T>
  void softmax_xent_forward(Acc<T>* probs, Acc<T>* row_loss, const T* logits,
                            const int32_t* labels, int64_t rows, int64_t classes) const {
    MLPS_ON_BACKEND(softmax_xent_forward, probs, row_loss, logits, labels, rows, classes);
  }
  template <typename T>
  void softmax_xent_backward(T* dlogits, const Acc<T>* probs, const int32_t* labels,
                             int64_t rows, int64_t classes, double scale) const {
    MLPS_ON_BACKEND(softmax_xent_backward, dlogits, probs, labels, rows, classes,
                    scale * loss_scale_);
    round_to_storage(dlogits, rows * classes);
  }
  template <typename T>
  void adam_update(T* param, T* grad, T* m, T* v, int64_t n, const AdamStep& step,
                   GradAfterUpdate after = GradAfterUpdate::kept) const {
    MLPS_ON_BACKEND(adam_update, param, grad, m, v, n, step, after);
  }
  template <typename T>
  void sgd_update(T* param, T* grad, int64_t n, double lr,
                  GradAfterUpdate after = GradAfterUpdate::kept) const {
    MLPS_ON_BACKEND(sgd_update, param, grad, n, lr, after);
  }
  // Mixed precision: the fp32 master updated and `value` written as its rounded copy, one pass.
  void adam_update_rounded(float* master, float* value, float* grad, float* m, float* v,
                           int64_t n, const AdamStep& step, GradAfterUpdate after) const {
    MLPS_ON_BACKEND(adam_update_rounded, master, value, grad, m, v, n, step, after, storage_);
  }
  void sgd_update_rounded(float* master, float* value, float* grad, int64_t n, double lr,
                          GradAfterUpdate after) const {
    MLPS_ON_BACKEND(sgd_update_rounded, master, value, grad, n, lr, after, storage_);
  }
  // Typed mixed precision: the fp32 master updated and the 16-bit tensor written from it.
  template <typename S>
  void adam_update_16bit(float* master, S* value, float* grad, float* m, float* v, int64_t n,
                         const AdamStep& step, GradAfterUpdate after) const {
    MLPS_ON_BACKEND(adam_update_16bit, master, value, grad, m, v, n, step, after);
  }
  template <typename S>
  void sgd_update_16bit(float* master, S* value, float* grad, int64_t n, double lr,
                        GradAfterUpdate after) const {
    MLPS_ON_BACKEND(sgd_update_16bit, master, value, grad, n, lr, after);
  }

 private:
  // gemm (C of T) and gemm_gradient (C of Acc<T>): the same for float and double but for the
  // emulation's rounding of an activation's C.
  template <typename T, typename C>
  void gemm_into(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, Acc<T> alpha,
                 const T* a, int64_t lda, const T* b, int64_t ldb, Acc<T> beta, C* c, int64_t ldc,
                 bool gradient) const {
    if constexpr (is_16bit_v<T>) {
      float* scratch = gemm_scratch(MLPS_ON_BACKEND(gemm_16bit_scratch, m, n, k, is_16bit_v<C>));
      MLPS_ON_BACKEND(gemm_16bit, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                      scratch);
    } else {
      MLPS_ON_BACKEND(gemm, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                      gemm_compute_);
      if (!gradient) round_to_storage(c, m, n, ldc);
    }
  }
  // The byte counts are mutable for the GEMM scratch, a working buffer a GEMM on a const Device
  // (the benchmarks', a layer's) may have to grow.
  void* allocate_counted(size_t bytes) const {
    void* p = MLPS_ON_BACKEND(device_alloc, bytes);
    ++allocations_;
    current_bytes_ += bytes;
    if (current_bytes_ > peak_bytes_) peak_bytes_ = current_bytes_;
    return p;
  }
  void release_counted(void* p, size_t bytes) const {
    if (!p) return;
    MLPS_ON_BACKEND(device_free, p);
    ++frees_;
    current_bytes_ -= bytes;
  }
  // At least `floats` floats of scratch, grown (and counted) when a GEMM needs more.
  float* gemm_scratch(int64_t floats) const {
    const size_t bytes = static_cast<size_t>(floats) * sizeof(float);
    if (bytes > gemm_scratch_bytes_) {
      release_counted(gemm_scratch_, gemm_scratch_bytes_);
      gemm_scratch_ = nullptr;  // should allocating throw, the destructor frees nothing twice
      gemm_scratch_bytes_ = 0;
      gemm_scratch_ = allocate_counted(bytes);
      gemm_scratch_bytes_ = bytes;
    }
    return static_cast<float*>(gemm_scratch_);
  }

  DeviceKind kind_;
  StorageFormat storage_;
  bool fp32_gradient_wire_ = false;
  GemmCompute gemm_compute_;
  double loss_scale_ = 1.0;
  mutable size_t current_bytes_ = 0;
  mutable size_t peak_bytes_ = 0;
  mutable int64_t allocations_ = 0;
  mutable int64_t frees_ = 0;
  mutable void* gemm_scratch_ = nullptr;
  mutable size_t gemm_scratch_bytes_ = 0;
};

}  // namespace mlps

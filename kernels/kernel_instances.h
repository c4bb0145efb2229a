#pragma once
// The explicit instantiations of the kernel templates, one list per pair of twin sources. Both
// twins expand the same list inside their own namespace (mlps::cpu or mlps::cuda), so the two
// backends cannot drift apart in the functions or element types they provide. Usage, at the
// end of a twin: MLPS_INSTANTIATE_KERNELS(MLPS_GEMM_INSTANCES)

// The element types of kernel_api.inc and sliced_rows_api.inc.
#define MLPS_INSTANTIATE_KERNELS(INSTANCES) INSTANCES(float) INSTANCES(double)
// The 16-bit storage types, for the kernels that read and write typed mixed precision's tensors
// (element-wise, LayerNorm, softmax; their TUs include kernels/half_types.h).
#define MLPS_INSTANTIATE_16BIT_KERNELS(INSTANCES) INSTANCES(bf16) INSTANCES(fp16)

#define MLPS_GEMM_INSTANCES(T)                                                                \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, \
                        int64_t, T, T*, int64_t, GemmCompute);

// The 16-bit storage types with each output type of their GEMM (itself, or float).
#define MLPS_INSTANTIATE_16BIT_GEMM()                                                          \
  MLPS_GEMM_16BIT_INSTANCE(bf16, bf16) MLPS_GEMM_16BIT_INSTANCE(bf16, float)                    \
  MLPS_GEMM_16BIT_INSTANCE(fp16, fp16) MLPS_GEMM_16BIT_INSTANCE(fp16, float)
#define MLPS_GEMM_16BIT_INSTANCE(S, C)                                                          \
  template void gemm_16bit<S, C>(bool, bool, int64_t, int64_t, int64_t, float, const S*, int64_t, \
                                 const S*, int64_t, float, C*, int64_t, float*);

#define MLPS_INSTANTIATE_16BIT_UPDATES()                                                     \
  MLPS_UPDATE_16BIT_INSTANCE(bf16) MLPS_UPDATE_16BIT_INSTANCE(fp16)
#define MLPS_UPDATE_16BIT_INSTANCE(S)                                                         \
  template void adam_update_16bit<S>(float*, S*, float*, float*, float*, int64_t,             \
                                     const AdamStep&, GradAfterUpdate);                       \
  template void sgd_update_16bit<S>(float*, S*, float*, int64_t, double, GradAfterUpdate);

#define MLPS_ELEMENTWISE_INSTANCES(T)                                                         \
  template void bias_add<T>(T*, const T*, int64_t, int64_t);                                  \
  template void bias_grad<T>(Acc<T>*, const T*, int64_t, int64_t, bool);                      \
  template void relu_forward<T>(T*, const T*, int64_t);                                       \
  template void relu_backward<T>(T*, const T*, const T*, int64_t);                            \
  template void residual_add<T>(T*, const T*, const T*, int64_t);

#define MLPS_LAYERNORM_INSTANCES(T)                                                           \
  template void layernorm_forward<T>(T*, Acc<T>*, Acc<T>*, const T*, const T*, const T*,      \
                                     int64_t, int64_t, double);                               \
  template void layernorm_backward<T>(T*, Acc<T>*, Acc<T>*, const T*, const T*,               \
                                      const Acc<T>*, const Acc<T>*, const T*, int64_t,        \
                                      int64_t, bool);

#define MLPS_SOFTMAX_XENT_INSTANCES(T)                                                        \
  template void softmax_xent_forward<T>(Acc<T>*, Acc<T>*, const T*, const int32_t*, int64_t,  \
                                        int64_t);                                             \
  template void softmax_xent_backward<T>(T*, const Acc<T>*, const int32_t*, int64_t, int64_t, \
                                         double);

#define MLPS_OPTIMIZER_INSTANCES(T)                                                  \
  template void adam_update<T>(T*, T*, T*, T*, int64_t, const AdamStep&, GradAfterUpdate); \
  template void sgd_update<T>(T*, T*, int64_t, double, GradAfterUpdate);

#define MLPS_NONFINITE_COUNT_INSTANCES(T)                          \
  template int64_t count_nonfinite<T>(const T*, int64_t);          \
  template void add_nonfinite_count<T>(uint64_t*, const T*, int64_t);

// combine_row_moments works on the statistics alone: float and double only.
#define MLPS_SLICED_ROWS_INSTANCES(T)                                                         \
  template void row_moments<T>(Acc<T>*, const T*, int64_t, int64_t);                         \
  template void layernorm_apply<T>(T*, const T*, const Acc<T>*, const Acc<T>*, const T*,      \
                                   const T*, int64_t, int64_t);                               \
  template void layernorm_backward_partial<T>(Acc<T>*, Acc<T>*, Acc<T>*, const T*, const T*,  \
                                              const Acc<T>*, const Acc<T>*, const T*, int64_t, \
                                              int64_t, bool);                                 \
  template void layernorm_backward_apply<T>(T*, const T*, const T*, const Acc<T>*,            \
                                            const Acc<T>*, const T*, const Acc<T>*, int64_t,  \
                                            int64_t, int64_t);
#define MLPS_COMBINE_ROW_MOMENTS_INSTANCES(T) \
  template void combine_row_moments<T>(T*, T*, const T*, int64_t, int64_t, int64_t, double);
// The sub-matrix copy, for every storage type (16-bit split logits too).
#define MLPS_COPY_2D_INSTANCES(T) \
  template void copy_2d<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t);

#include "src/model/linear_layer.h"

namespace mlps {

template <typename T>
LinearLayer<T>::LinearLayer(Device& device, ParameterList<T>& params, const std::string& name,
                            int64_t in, int64_t out)
    : device_(device), in_(in), out_(out),
      weight_(params.add(name + ".weight", out, in, InitKind::uniform_fan_in, in)),
      bias_(params.add(name + ".bias", 1, out, InitKind::uniform_fan_in, in)) {}

template <typename T>
void LinearLayer<T>::forward(const T* x, T* y, int64_t rows, bool /*backward_next*/) {
  device_.gemm<T>(false, true, rows, out_, in_, T(1), x, in_, weight_.value.data(), in_, T(0), y,
                  out_);
  device_.bias_add<T>(y, bias_.value.data(), rows, out_);
}

template <typename T>
void LinearLayer<T>::backward(const T* x, const T* dy, T* dx, int64_t rows, bool accumulate) {
  device_.gemm<T>(true, false, out_, in_, rows, T(1), dy, out_, x, in_, accumulate ? T(1) : T(0),
                  weight_.grad.data(), in_);
  device_.bias_grad<T>(bias_.grad.data(), dy, rows, out_, accumulate);
  if (dx)
    device_.gemm<T>(false, false, rows, in_, out_, T(1), dy, out_, weight_.value.data(), in_, T(0),
                    dx, in_);
}

template class LinearLayer<float>;
template class LinearLayer<double>;

}  // namespace mlps

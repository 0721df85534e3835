// The activations a neuron may apply after its affine map: their values and derivatives, shared
// by the activation operators (relu(), tanh(), sigmoid()) and by a layer's rows, which apply
// them inside one node.
#pragma once

#include <cmath>
#include <cstddef>

#include "burtorch/config.hpp"
#include "burtorch/kernels.hpp"

namespace burtorch {

enum class Activation { Identity, Relu, Tanh, Sigmoid };

namespace detail {

template <class T>
BURTORCH_INLINE T activated(Activation activation, T x) noexcept {
  switch (activation) {
    case Activation::Relu: return x > T(0) ? x : T(0);
    case Activation::Tanh: return std::tanh(x);
    case Activation::Sigmoid: return T(1) / (T(1) + std::exp(-x));
    case Activation::Identity: break;
  }
  return x;
}

// g times the derivative at the input whose activation is y: the derivatives are written in y.
template <class T>
BURTORCH_INLINE T activationGradient(Activation activation, T y, T g) noexcept {
  switch (activation) {
    case Activation::Relu: return y > T(0) ? g : T(0);  // the indicator, not the output
    case Activation::Tanh: return g * (T(1) - y * y);
    case Activation::Sigmoid: return g * (y * (T(1) - y));
    case Activation::Identity: break;
  }
  return g;
}

// The same over n values at once (a block of a layer's outputs): one switch, then a loop that
// the compiler vectorises.
template <Activation A, class T>
BURTORCH_INLINE void activateEach(T* BURTORCH_RESTRICT x, std::size_t n) noexcept {
  for (std::size_t k = 0; k < n; ++k) x[k] = activated(A, x[k]);
}

template <class T>
void activateMany(Activation activation, T* x, std::size_t n) noexcept {
  switch (activation) {
    case Activation::Relu: return activateEach<Activation::Relu>(x, n);
    case Activation::Tanh: return activateEach<Activation::Tanh>(x, n);
    case Activation::Sigmoid: return activateEach<Activation::Sigmoid>(x, n);
    case Activation::Identity: return;
  }
}

template <Activation A, class T>
BURTORCH_INLINE void gradientEach(const T* BURTORCH_RESTRICT y, const T* BURTORCH_RESTRICT g, T* BURTORCH_RESTRICT out, std::size_t n) noexcept {
  for (std::size_t k = 0; k < n; ++k) out[k] = activationGradient(A, y[k], g[k]);
}

// out[k] = activationGradient(activation, y[k], g[k]) for k < n.
template <class T>
void activationGradients(Activation activation, const T* y, const T* g, T* out, std::size_t n) noexcept {
  switch (activation) {
    case Activation::Relu: return gradientEach<Activation::Relu>(y, g, out, n);
    case Activation::Tanh: return gradientEach<Activation::Tanh>(y, g, out, n);
    case Activation::Sigmoid: return gradientEach<Activation::Sigmoid>(y, g, out, n);
    case Activation::Identity: return gradientEach<Activation::Identity>(y, g, out, n);
  }
}

}  // namespace detail
}  // namespace burtorch

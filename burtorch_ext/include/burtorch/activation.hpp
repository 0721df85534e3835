// The activations a neuron may apply after its affine map: their values and derivatives, shared
// by the activation operators (relu(), tanh(), sigmoid()) and by a layer's rows, which apply
// them inside one node.
#pragma once

#include <cmath>

#include "burtorch/config.hpp"

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

}  // namespace detail
}  // namespace burtorch

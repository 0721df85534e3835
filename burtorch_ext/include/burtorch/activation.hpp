// The activations a neuron may apply after its affine map.
#pragma once

#include "burtorch/scalar_ops.hpp"

namespace burtorch {

enum class Activation { Identity, Relu, Tanh, Sigmoid };

template <class T>
Value<T> activate(Activation activation, Value<T> x) noexcept {
  switch (activation) {
    case Activation::Relu: return relu(x);
    case Activation::Tanh: return tanh(x);
    case Activation::Sigmoid: return sigmoid(x);
    case Activation::Identity: break;
  }
  return x;
}

}  // namespace burtorch

// Neuron and Linear layer (paper F.1). Behind Linear, one fused node per row of a layer over a
// block of tokens (Op::LinearRow): linear_rows.hpp, its backward linear_backward.hpp.
//
// A Linear layer's parameters are consecutive nodes laid out as PyTorch lays out nn.Linear: the
// weight matrix [outputs][inputs] row by row, then the biases. So a neuron's weights are one
// node range (one link word, not one per weight), and loading weights from elsewhere is one
// copy per block.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "burtorch/inner_product.hpp"
#include "burtorch/linear_backward.hpp"
#include "burtorch/linear_rows.hpp"
#include "burtorch/random.hpp"

namespace burtorch {


template <class T>
struct Neuron {
  NodeRange<T> weights;
  Value<T> bias;  // Value() when the neuron has no bias
  Activation activation = Activation::Identity;

  // A neuron with its own parameters, drawn from uniform(-1, 1).
  static Neuron create(std::size_t inputs, bool withBias, Activation activation, Rng& rng) noexcept {
    Neuron n;
    n.weights = leaves<T>(inputs);
    for (std::size_t k = 0; k < inputs; ++k) n.weights[k].setData(rng.uniform<T>(-1, 1));
    if (withBias) n.bias = Value<T>(rng.uniform<T>(-1, 1));
    n.activation = activation;
    return n;
  }

  bool hasBias() const noexcept { return bias.index() != kNoIndex; }

  template <ValueList L>
  Value<T> operator()(const L& x) const noexcept {
    const Value<T> affine = hasBias() ? innerProductWithBias(x, weights, bias) : innerProduct(x, weights);
    return activate(activation, affine);
  }
};

template <class T>
class Linear {
 public:
  // Parameters drawn from uniform(-1, 1).
  Linear(std::size_t inputs, std::size_t outputs, bool withBias, Activation activation, Rng& rng) noexcept
      : Linear(inputs, outputs, withBias, activation) {
    for (std::size_t k = 0; k < params_.size(); ++k) params_[k].setData(rng.uniform<T>(-1, 1));
  }

  // Parameters zero, to be loaded.
  Linear(std::size_t inputs, std::size_t outputs, bool withBias, Activation activation) noexcept
      : inputs_(inputs), outputs_(outputs), withBias_(withBias), activation_(activation) {
    params_ = leaves<T>(inputs * outputs + (withBias ? outputs : 0));
  }

  // A layer without bias over weights that exist (outputs x inputs of them, row-major): attention's
  // query, key and value weights, consecutive, as one product.
  Linear(NodeRange<T> weights, std::size_t outputs, std::size_t inputs) noexcept
      : inputs_(inputs), outputs_(outputs), withBias_(false), activation_(Activation::Identity), params_{weights.first, static_cast<Index>(outputs * inputs)} {}

  std::size_t inputs() const noexcept { return inputs_; }
  std::size_t outputs() const noexcept { return outputs_; }
  bool hasBias() const noexcept { return withBias_; }
  NodeRange<T> parameters() const noexcept { return params_; }
  NodeRange<T> weights() const noexcept { return {params_.first, static_cast<Index>(inputs_ * outputs_)}; }
  NodeRange<T> biases() const noexcept {
    return {static_cast<Index>(params_.first + inputs_ * outputs_), static_cast<Index>(withBias_ ? outputs_ : 0)};
  }

  Neuron<T> neuron(std::size_t j) const noexcept {
    Neuron<T> n;
    n.weights = {static_cast<Index>(params_.first + j * inputs_), static_cast<Index>(inputs_)};
    if (withBias_) n.bias = biases()[j];
    n.activation = activation_;
    return n;
  }

  // Sets the parameters from a row-major [outputs][inputs] weight matrix and the biases.
  bool load(std::span<const T> weight, std::span<const T> bias = {}) noexcept {
    if (weight.size() != inputs_ * outputs_ || bias.size() != biases().size()) return false;
    T* values = Pool<T>::local().values();
    std::memcpy(values + params_.first, weight.data(), weight.size_bytes());
    if (!bias.empty()) std::memcpy(values + biases().first, bias.data(), bias.size_bytes());
    return true;
  }

  // out[j] = activation(w_j . x + b_j), one node each (Op::LinearRow): the outputs are
  // consecutive nodes, which the next layer reads as one contiguous run. x may also hold a block
  // of tokens, row-major (a contiguous container of tokens x inputs handles): then out holds
  // tokens x outputs, each token's outputs one after the other, as PyTorch applies a layer to
  // the last dimension.
  template <ValueList L>
  void forward(const L& x, std::span<Value<T>> out) const noexcept {
    BURTORCH_ASSERT(outputs_ > 0 && !out.empty() && out.size() % outputs_ == 0);
    const std::size_t tokens = out.size() / outputs_;
    const auto inputOf = [&](std::size_t t) {
      if constexpr (ValueRange<L>) {
        const std::span<const Value<T>> all(x);
        BURTORCH_ASSERT(all.size() == tokens * inputs_);
        return record(all.subspan(t * inputs_, inputs_));
      } else {
        BURTORCH_ASSERT(tokens == 1);
        return checked(record(x));
      }
    };
    detail::linearRows(tokens, inputOf, params_.first, withBias_ ? biases().first : kNoIndex, activation_, out);
  }

  // As forward() over a block of tokens whose inputs are not one container: token t's input is
  // inputOf(t), any ValueList (the embedding rows one sample's context looks up).
  template <class InputOf>
  void forwardEach(std::size_t tokens, InputOf inputOf, std::span<Value<T>> out) const noexcept {
    BURTORCH_ASSERT(out.size() == tokens * outputs_);
    detail::linearRows(tokens, [&](std::size_t t) { return checked(record(inputOf(t))); }, params_.first,
                       withBias_ ? biases().first : kNoIndex, activation_, out);
  }

  template <ValueList L>
  std::vector<Value<T>> operator()(const L& x) const {
    std::vector<Value<T>> out(outputs_);
    forward(x, std::span<Value<T>>(out));
    return out;
  }

 private:
  RecordedList<T> checked(RecordedList<T> xs) const noexcept {
    BURTORCH_ASSERT(xs.count == inputs_);
    return xs;
  }

  std::size_t inputs_, outputs_;
  bool withBias_;
  Activation activation_;
  NodeRange<T> params_;
};

}  // namespace burtorch

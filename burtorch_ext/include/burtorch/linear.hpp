// Neuron and Linear layer (paper F.1). A Linear layer's parameters are consecutive nodes laid
// out as PyTorch lays out nn.Linear: the weight matrix [outputs][inputs] row by row, then the
// biases. So a neuron's weights are one node range (one link word, not one per weight), and
// loading weights from elsewhere is one copy per block.
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "burtorch/activation.hpp"
#include "burtorch/random.hpp"
#include "burtorch/inner_product.hpp"

namespace burtorch {

namespace detail {

// The shared tail of a layer's rows over a block of tokens: [count, first weight, first bias or
// kNoIndex, rows, y_0, tokens, activation], then each token's input list.
inline constexpr std::size_t kLinearHeader = 7;

// out[t rows + j] = activation(w_j . x_t (+ b_j)) for each token t, with the weight rows
// w_j = [w0 + j n, w0 + (j + 1) n), biases b_j = bias0 + j (kNoIndex: none) and x_t =
// inputOf(t), the values exactly as innerProduct(WithBias) and the activation's operator compute
// them. The rows of all the tokens are consecutive nodes that share one tail, and backward
// handles the reached ones together: one pass over each weight row's gradient for all the tokens.
template <class T, class InputOf>
void linearRows(std::size_t tokens, InputOf inputOf, Index w0, Index bias0, Activation activation, std::span<Value<T>> out) noexcept {
  Pool<T>& pool = Pool<T>::local();
  const std::size_t rows = out.size() / tokens;
  const Index tail = pool.appendLinks(kLinearHeader + tokens);
  for (std::size_t t = 0; t < tokens; ++t) {
    const RecordedList<T> x = inputOf(t);
    const std::size_t n = x.count;
    Index* links = pool.links();  // recording may move the links
    links[tail] = x.count;
    links[tail + kLinearHeader + t] = x.offset;
    const Index y0 = pool.pushRun(rows, Op::LinearRow, x.offset, tail);
    T* v = pool.values();
    const auto row = [&](std::size_t j, T data) {
      if (bias0 != kNoIndex) data += v[bias0 + j];
      v[y0 + j] = activated(activation, data);
      out[t * rows + j] = Value<T>::fromIndex(y0 + static_cast<Index>(j));
    };
    visitList(links, x.offset, [&](auto xAt) {
      if constexpr (std::is_same_v<decltype(xAt), RangeAt>) {
        for (std::size_t j = 0; j < rows; j += kernels::kDotRows) {
          const std::size_t count = std::min(rows - j, kernels::kDotRows);
          T dots[kernels::kDotRows];
          kernels::dotRows(v + xAt.first, v + w0 + j * n, n, count, dots);
          for (std::size_t c = 0; c < count; ++c) row(j + c, dots[c]);
        }
      } else {
        for (std::size_t j = 0; j < rows; ++j) row(j, dotOf<T>(v, xAt, RangeAt{w0 + static_cast<Index>(j * n)}, n));
      }
    });
  }
  Index* links = pool.links();
  links[tail + 1] = w0;
  links[tail + 2] = bias0;
  links[tail + 3] = static_cast<Index>(rows);
  links[tail + 4] = out.empty() ? 0 : out[0].index();
  links[tail + 5] = static_cast<Index>(tokens);
  links[tail + 6] = static_cast<Index>(activation);
}

}  // namespace detail

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

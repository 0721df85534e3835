// Layer normalisation over one vector: (x - mean) / sqrt(var + eps), then gamma * . + beta.
// The variance is taken of the centred values (not mean(x^2) - mean(x)^2), which stays
// accurate when the mean is large compared with the spread.
#pragma once

#include <cstring>
#include <span>

#include "burtorch/reductions.hpp"

namespace burtorch {

template <class T>
class LayerNorm {
 public:
  explicit LayerNorm(std::size_t dim, bool affine = true, T eps = T(1e-5)) noexcept : dim_(dim), eps_(eps) {
    if (affine) {
      gamma_ = leaves<T>(dim, T(1));
      beta_ = leaves<T>(dim, T(0));
    }
  }

  std::size_t dim() const noexcept { return dim_; }
  bool affine() const noexcept { return gamma_.count != 0; }
  NodeRange<T> parameters() const noexcept { return {gamma_.first, gamma_.count + beta_.count}; }
  NodeRange<T> gamma() const noexcept { return gamma_; }
  NodeRange<T> beta() const noexcept { return beta_; }

  bool load(std::span<const T> gamma, std::span<const T> beta) noexcept {
    if (!affine() || gamma.size() != dim_ || beta.size() != dim_) return false;
    T* values = Pool<T>::local().values();
    std::memcpy(values + gamma_.first, gamma.data(), gamma.size_bytes());
    std::memcpy(values + beta_.first, beta.data(), beta.size_bytes());
    return true;
  }

  // out may be the caller's buffer for x's handles: each x[i] is read before out[i] is written.
  // Each stage makes its dim nodes one after the other, so every stage (the output included) is
  // a run of consecutive nodes that the next reduction or layer reads as one word.
  template <class L>
    requires IndexableValues<L> && ValueList<L>
  void forward(const L& x, std::span<Value<T>> out) const noexcept {
    BURTORCH_ASSERT(x.size() == dim_ && out.size() == dim_);
    const Value<T> mu = reduceMean(x);
    for (std::size_t i = 0; i < dim_; ++i) out[i] = x[i] - mu;
    const Value<T> scale = invSqrt(addConstant(reduceMeanSquares(std::span<const Value<T>>(out)), eps_));
    for (std::size_t i = 0; i < dim_; ++i) out[i] = out[i] * scale;
    if (!affine()) return;
    for (std::size_t i = 0; i < dim_; ++i) out[i] = out[i] * gamma_[i];
    for (std::size_t i = 0; i < dim_; ++i) out[i] = out[i] + beta_[i];
  }

 private:
  std::size_t dim_;
  T eps_;
  NodeRange<T> gamma_, beta_;
};

}  // namespace burtorch

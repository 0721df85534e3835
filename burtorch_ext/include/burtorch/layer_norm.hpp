// Layer normalisation over one vector: (x - mean) / sqrt(var + eps), then gamma * . + beta.
// The variance is taken of the centred values (not mean(x^2) - mean(x)^2), which stays
// accurate when the mean is large compared with the spread.
#pragma once

#include <cmath>
#include <cstring>
#include <span>
#include <utility>

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

  // out may be the caller's buffer for x's handles: x is read before out is written. The
  // outputs are dim consecutive nodes of one n-ary operator (Op::LayerNormRow), whose values are
  // those of the scalar graph reduceMean, x - mu, reduceMeanSquares, invSqrt(. + eps), * scale,
  // * gamma, + beta, bit for bit.
  template <class L>
    requires IndexableValues<L> && ValueList<L>
  void forward(const L& x, std::span<Value<T>> out) const noexcept {
    BURTORCH_ASSERT(x.size() == dim_ && out.size() == dim_);
    Pool<T>& pool = Pool<T>::local();
    const RecordedList<T> xs = record(x);
    const Index tail = pool.appendLinks(detail::kLayerNormTail);
    const T* v = pool.values();
    const std::pair<T, T> stats = detail::visitList(pool.links(), xs.offset, [&](auto at) {
      const T m = detail::reduceForward(Op::ReduceMean, v, at, dim_);
      const T meanSquares = detail::sum4<T>(dim_, at, [&](Index i) { const T c = v[i] - m; return c * c; }) / static_cast<T>(dim_);
      return std::pair{m, T(1) / std::sqrt(meanSquares + eps_)};
    });
    const T mu = stats.first, scale = stats.second;
    Index* links = pool.links();
    links[tail] = static_cast<Index>(dim_);
    links[tail + 1] = affine() ? gamma_.first : kNoIndex;
    links[tail + 2] = beta_.first;
    std::memcpy(links + tail + 4, &mu, sizeof(T));
    std::memcpy(links + tail + 4 + detail::kConstWords, &scale, sizeof(T));
    const Index y0 = pool.pushRun(dim_, Op::LayerNormRow, xs.offset, tail);
    T* values = pool.values();
    detail::visitList(links, xs.offset, [&](auto at) {
      for (std::size_t i = 0; i < dim_; ++i) {
        T y = (values[at(i)] - mu) * scale;
        if (affine()) y = y * values[gamma_.first + i] + values[beta_.first + i];
        values[y0 + i] = y;
        out[i] = Value<T>::fromIndex(y0 + static_cast<Index>(i));
      }
    });
    links[tail + 3] = y0;
  }

 private:
  std::size_t dim_;
  T eps_;
  NodeRange<T> gamma_, beta_;
};

}  // namespace burtorch

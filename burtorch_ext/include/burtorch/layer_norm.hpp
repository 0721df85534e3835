// Layer normalisation over one vector: (x - mean) / sqrt(var + eps), then gamma * . + beta, one
// fused node per output (Op::LayerNormRow), with its record, forward and backward. The variance
// is taken of the centred values (not mean(x^2) - mean(x)^2), which stays accurate when the
// mean is large compared with the spread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>

#include "burtorch/reductions.hpp"

namespace burtorch {

namespace detail {

// What a layer norm's outputs share, at link b of each of them; the x list is at link a.
template <class T>
struct LayerNormRecord {
  Index n;
  Index firstGain;    // kNoIndex: no gain and no bias
  Index firstBias;
  Index firstOutput;  // the outputs are consecutive nodes
  T mean;
  T scale;            // 1 / sqrt(var + eps)
};

// Every output reached, x one run and a gain (a transformer's layer norms): the terms of
// layerNormRowBackward, each in the same order, over contiguous arrays that the compiler
// vectorises.
template <class T>
BURTORCH_INLINE void layerNormDenseBackward(Sweep<T>& s, const LayerNormRecord<T>& norm, Index x0) noexcept {
  const std::size_t n = norm.n;
  const T mean = norm.mean, scale = norm.scale;
  const T* BURTORCH_RESTRICT x = s.v + x0;
  const T* BURTORCH_RESTRICT gamma = s.v + norm.firstGain;
  const T* BURTORCH_RESTRICT dy = s.g + norm.firstOutput;
  T sumD = 0, sumDXhat = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const T d = dy[k] * gamma[k];
    sumD += d;
    sumDXhat += d * ((x[k] - mean) * scale);
  }
  const T meanD = sumD / static_cast<T>(n), meanDXhat = sumDXhat / static_cast<T>(n);
  T* BURTORCH_RESTRICT dx = s.g + x0;
  T* BURTORCH_RESTRICT dGamma = s.g + norm.firstGain;
  T* BURTORCH_RESTRICT dBeta = s.g + norm.firstBias;
  for (std::size_t k = 0; k < n; ++k) {
    const T xhat = (x[k] - mean) * scale;
    dGamma[k] += dy[k] * xhat;
    dBeta[k] += dy[k];
    dx[k] += scale * (dy[k] * gamma[k] - meanD - xhat * meanDXhat);
  }
  s.reach(norm.firstGain, n);
  s.reach(norm.firstBias, n);
  s.reach(x0, n);
}

// Node i is the highest reached output of a layer norm (see Resume); outputs the root does not
// reach contribute nothing. With y = xhat * gamma + beta and xhat = (x - mean) * scale:
//   dx_k = scale * (d_k - mean(d) - xhat_k * mean(d * xhat)),  d = dy * gamma,
// the derivative of the scalar graph whose values LayerNorm::forward computes.
template <class T>
BURTORCH_OUTLINE Resume layerNormRowBackward(bool* reached, Index low, Index floor, Index i, Index xList, Index at) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const auto norm = readRecord<LayerNormRecord<T>>(s.links + at);
  const std::size_t n = norm.n;
  const Index gamma0 = norm.firstGain, beta0 = norm.firstBias, y0 = norm.firstOutput;
  const T mean = norm.mean, scale = norm.scale;
  const std::size_t top = i - y0;
  const Index xWord = s.links[xList];
  if (isOneRun(xWord) && gamma0 != kNoIndex && top + 1 == n && std::memchr(s.reached + y0, 0, top) == nullptr) {
    layerNormDenseBackward(s, norm, xWord & ~kRangeFlag);
    std::fill(s.reached + y0, s.reached + i, false);
    return resumeBelow(s, y0);
  }
  const auto live = [&](std::size_t k) { return k == top || (k < top && s.reached[y0 + k]); };
  const auto dy = [&](std::size_t k) { return live(k) ? s.g[y0 + k] : T(0); };
  const auto d = [&](std::size_t k) { return gamma0 == kNoIndex ? dy(k) : dy(k) * s.v[gamma0 + k]; };
  visitList(s.links, xList, [&](auto xAt) {
    const auto xhat = [&](std::size_t k) { return (s.v[xAt(k)] - mean) * scale; };
    T sumD = 0, sumDXhat = 0;
    for (std::size_t k = 0; k < n; ++k) {
      sumD += d(k);
      sumDXhat += d(k) * xhat(k);
    }
    const T meanD = sumD / static_cast<T>(n), meanDXhat = sumDXhat / static_cast<T>(n);
    for (std::size_t k = 0; k < n; ++k) {
      if (live(k) && gamma0 != kNoIndex) {
        s.addToLeafOrNode(gamma0 + static_cast<Index>(k), dy(k) * xhat(k));
        s.addToLeafOrNode(beta0 + static_cast<Index>(k), dy(k));
      }
      s.add(xAt(k), scale * (d(k) - meanD - xhat(k) * meanDXhat));
    }
  });
  for (std::size_t k = 0; k < top; ++k) s.reached[y0 + k] = false;
  return resumeBelow(s, y0);
}

}  // namespace detail

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
    const Index at = pool.appendLinks(detail::kWords<detail::LayerNormRecord<T>>);
    const T* v = pool.values();
    const std::pair<T, T> stats = detail::visitList(pool.links(), xs.offset, [&](auto xAt) {
      const T m = detail::reduceForward(Op::ReduceMean, v, xAt, dim_);
      const T meanSquares = detail::sum4<T>(dim_, xAt, [&](Index i) { const T c = v[i] - m; return c * c; }) / static_cast<T>(dim_);
      return std::pair{m, T(1) / std::sqrt(meanSquares + eps_)};
    });
    const T mu = stats.first, scale = stats.second;
    const Index y0 = pool.pushRun(dim_, Op::LayerNormRow, xs.offset, at);
    T* values = pool.values();
    detail::visitList(pool.links(), xs.offset, [&](auto xAt) {
      for (std::size_t i = 0; i < dim_; ++i) {
        T y = (values[xAt(i)] - mu) * scale;
        if (affine()) y = y * values[gamma_.first + i] + values[beta_.first + i];
        values[y0 + i] = y;
        out[i] = Value<T>::fromIndex(y0 + static_cast<Index>(i));
      }
    });
    const detail::LayerNormRecord<T> norm{static_cast<Index>(dim_), affine() ? gamma_.first : kNoIndex, beta_.first, y0, mu, scale};
    detail::writeRecord(pool.links() + at, norm);
  }

 private:
  std::size_t dim_;
  T eps_;
  NodeRange<T> gamma_, beta_;
};

}  // namespace burtorch

// Layer normalisation over one vector: (x - mean) / sqrt(var + eps), then gamma * . + beta, one
// fused node per output (Op::LayerNormRow), with its record, forward and backward; over many
// vectors that lie in one run of nodes (a block of tokens), one record and one backward for all
// of them, row after row over contiguous arrays. The variance
// is taken of the centred values (not mean(x^2) - mean(x)^2), which stays accurate when the
// mean is large compared with the spread.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "burtorch/reductions.hpp"
#include "burtorch/simd.hpp"

namespace burtorch {

namespace detail {

// What a layer norm's outputs share, at link b of each of them; the x list is at link a (rows
// of n: with rows > 1, one run of rows x n nodes). Then, in the link array, each row's mean and
// scale (1 / sqrt(var + eps)), sizeof(T) bytes each.
template <class T>
struct LayerNormRecord {
  Index n;
  Index rows;
  Index firstGain;    // kNoIndex: no gain and no bias
  Index firstBias;
  Index firstOutput;  // the outputs are consecutive nodes, row after row

  std::size_t words() const noexcept { return kWords<LayerNormRecord> + 2 * rows * kWords<T>; }
  // Row r's mean and scale.
  static std::pair<T, T> stats(const Index* record, std::size_t r) noexcept {
    T both[2];
    std::memcpy(both, record + kWords<LayerNormRecord> + 2 * r * kWords<T>, sizeof both);
    return {both[0], both[1]};
  }
  static void setStats(Index* record, std::size_t r, T mean, T scale) noexcept {
    const T both[2] = {mean, scale};
    std::memcpy(record + kWords<LayerNormRecord> + 2 * r * kWords<T>, both, sizeof both);
  }
};

// One row, x one run and a gain, dy its outputs' gradients (zero where the root does not reach
// them): the terms of layerNormRowBackward, each in the same order, over contiguous arrays that
// the compiler vectorises.
template <class T>
BURTORCH_INLINE void layerNormDenseBackward(Sweep<T>& s, const LayerNormRecord<T>& norm, T mean, T scale, Index x0,
                                            const T* BURTORCH_RESTRICT dy) noexcept {
  const std::size_t n = norm.n;
  const T* BURTORCH_RESTRICT x = s.v + x0;
  const T* BURTORCH_RESTRICT gamma = s.v + norm.firstGain;
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
}

// A block of rows: each row as layerNormDenseBackward, the outputs the root does not reach
// contributing nothing.
template <class T>
BURTORCH_INLINE void layerNormBlockBackward(Sweep<T>& s, const LayerNormRecord<T>& norm, const Index* record, Index x0, std::size_t top) noexcept {
  const std::size_t n = norm.n, rows = norm.rows;
  const Index y0 = norm.firstOutput;
  const bool dense = top + 1 == rows * n && std::memchr(s.reached + y0, 0, top) == nullptr;
  static thread_local std::vector<T> masked BURTORCH_INITIAL_EXEC;  // one row's dy where some outputs are not reached
  if (!dense && masked.size() < n) masked.resize(n);
  for (std::size_t r = 0; r < rows; ++r) {
    const T* dy = s.g + y0 + r * n;
    if (!dense) {
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t at = r * n + k;
        masked[k] = at == top || (at < top && s.reached[y0 + at]) ? dy[k] : T(0);
      }
      dy = masked.data();
    }
    const auto [mean, scale] = LayerNormRecord<T>::stats(record, r);
    layerNormDenseBackward(s, norm, mean, scale, x0 + static_cast<Index>(r * n), dy);
  }
  s.reach(norm.firstGain, n);
  s.reach(norm.firstBias, n);
  s.reach(x0, rows * n);
}

// Node i is the highest reached output of a layer norm (see Resume); outputs the root does not
// reach contribute nothing. With y = xhat * gamma + beta and xhat = (x - mean) * scale:
//   dx_k = scale * (d_k - mean(d) - xhat_k * mean(d * xhat)),  d = dy * gamma,
// the derivative of the scalar graph whose values LayerNorm::forward computes.
template <class T>
BURTORCH_OUTLINE Resume layerNormRowBackward(bool* reached, Index low, Index floor, Index i, Index xList, Index at) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const Index* record = s.links + at;
  const auto norm = readRecord<LayerNormRecord<T>>(record);
  const std::size_t n = norm.n;
  const Index gamma0 = norm.firstGain, beta0 = norm.firstBias, y0 = norm.firstOutput;
  const std::size_t top = i - y0;
  const Index xWord = s.links[xList];
  if (norm.rows > 1) {
    layerNormBlockBackward(s, norm, record, xWord & ~kRangeFlag, top);
    std::fill(s.reached + y0, s.reached + i, false);
    return resumeBelow(s, y0);
  }
  const std::pair<T, T> stats = LayerNormRecord<T>::stats(record, 0);
  const T mean = stats.first, scale = stats.second;
  if (isOneRun(xWord) && gamma0 != kNoIndex && top + 1 == n && std::memchr(s.reached + y0, 0, top) == nullptr) {
    layerNormDenseBackward(s, norm, mean, scale, xWord & ~kRangeFlag, s.g + y0);
    s.reach(gamma0, n);
    s.reach(beta0, n);
    s.reach(xWord & ~kRangeFlag, n);
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
    const detail::LayerNormRecord<T> norm{static_cast<Index>(dim_), 1, affine() ? gamma_.first : kNoIndex, beta_.first, 0};
    const Index at = pool.appendLinks(norm.words());
    const T* v = pool.values();
    const std::pair<T, T> stats = detail::visitList(pool.links(), xs.offset, [&](auto xAt) { return rowStats(v, xAt); });
    normalise(xs.offset, at, 0, norm, stats, out);
  }

  // Each of the rows of x (rows x dim handles, row after row) as forward() computes it, with the
  // same bits; where x is one run of nodes, as one block of rows x dim outputs with one record
  // (the backward then takes all the rows in one call, over contiguous arrays).
  void forwardRows(std::span<const Value<T>> x, std::span<Value<T>> out) const noexcept {
    const std::size_t rows = x.size() / dim_;
    BURTORCH_ASSERT(x.size() == rows * dim_ && out.size() == x.size());
    if (rows < 2 || !affine() || !consecutive(x)) {
      for (std::size_t r = 0; r < rows; ++r) forward(x.subspan(r * dim_, dim_), out.subspan(r * dim_, dim_));
      return;
    }
    Pool<T>& pool = Pool<T>::local();
    const Index x0 = x[0].index();
    const RecordedList<T> xs = detail::recordRange<T>(x0, x.size());  // what record(x) makes of a run, without a second scan
    const detail::LayerNormRecord<T> norm{static_cast<Index>(dim_), static_cast<Index>(rows), gamma_.first, beta_.first, 0};
    const Index at = pool.appendLinks(norm.words());
    for (std::size_t r = 0; r < rows; ++r) {
      const Index first = x0 + static_cast<Index>(r * dim_);
      const std::pair<T, T> stats = rowStats(pool.values(), [first](std::size_t k) { return first + static_cast<Index>(k); });
      const Index y0 = pushRow(xs.offset, at, r, norm, stats);
      // Over contiguous arrays, which the compiler vectorises: each output the same operations as
      // in normalise(), so the same bits.
      T* values = pool.values();
      const T* BURTORCH_RESTRICT xr = values + first;
      const T* BURTORCH_RESTRICT gamma = values + gamma_.first;
      const T* BURTORCH_RESTRICT beta = values + beta_.first;
      T* BURTORCH_RESTRICT y = values + y0;
      for (std::size_t i = 0; i < dim_; ++i) y[i] = (xr[i] - stats.first) * stats.second * gamma[i] + beta[i];
      Value<T>* to = out.data() + r * dim_;
      for (std::size_t i = 0; i < dim_; ++i) to[i] = Value<T>::fromIndex(y0 + static_cast<Index>(i));
    }
  }

 private:
  template <class At>
  std::pair<T, T> rowStats(const T* v, At xAt) const noexcept {
    const T m = detail::reduceForward(Op::ReduceMean, v, xAt, dim_);
    const T meanSquares = detail::sum4<T>(dim_, xAt, [&](Index i) { const T c = v[i] - m; return c * c; }) / static_cast<T>(dim_);
    return {m, T(1) / std::sqrt(meanSquares + eps_)};
  }

  // Row r of the record at `at` (x's list at xList): its dim output nodes made and its stats kept
  // (the block's first output goes into the record); returns the first output.
  Index pushRow(Index xList, Index at, std::size_t r, detail::LayerNormRecord<T> norm, std::pair<T, T> stats) const noexcept {
    Pool<T>& pool = Pool<T>::local();
    const Index y0 = pool.pushRun(dim_, Op::LayerNormRow, xList, at);
    Index* record = pool.links() + at;
    if (r == 0) {
      norm.firstOutput = y0;
      detail::writeRecord(record, norm);
    }
    detail::LayerNormRecord<T>::setStats(record, r, stats.first, stats.second);
    return y0;
  }

  // Row r's outputs, x read through its recorded list.
  void normalise(Index xList, Index at, std::size_t r, detail::LayerNormRecord<T> norm, std::pair<T, T> stats,
                 std::span<Value<T>> out) const noexcept {
    const Index y0 = pushRow(xList, at, r, norm, stats);
    Pool<T>& pool = Pool<T>::local();
    const T mu = stats.first, scale = stats.second;
    T* values = pool.values();
    detail::visitList(pool.links(), xList, [&](auto xAt) {
      for (std::size_t i = 0; i < dim_; ++i) {
        T y = (values[xAt(r * dim_ + i)] - mu) * scale;
        if (affine()) y = y * values[gamma_.first + i] + values[beta_.first + i];
        values[y0 + i] = y;
        out[i] = Value<T>::fromIndex(y0 + static_cast<Index>(i));
      }
    });
  }

 private:
  std::size_t dim_;
  T eps_;
  NodeRange<T> gamma_, beta_;
};

}  // namespace burtorch

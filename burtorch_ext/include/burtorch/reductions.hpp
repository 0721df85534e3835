// N-ary operators over one recorded list (paper Table 8: reduce*; plus logSumExp), forward and
// backward, and the derived ones of Table 10. Sums use four accumulators so that the CPU can
// overlap the additions.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "burtorch/lists.hpp"
#include "burtorch/scalar_ops.hpp"
#include "burtorch/sweep.hpp"

namespace burtorch {

namespace detail {

template <class T, class At, class F>
BURTORCH_INLINE T sum4(std::size_t n, At at, F term) noexcept {
  T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += term(at(k));
    s1 += term(at(k + 1));
    s2 += term(at(k + 2));
    s3 += term(at(k + 3));
  }
  for (; k < n; ++k) s0 += term(at(k));
  return (s0 + s1) + (s2 + s3);
}

template <class T, class At>
T logSumExpForward(const T* v, At at, std::size_t n) noexcept {
  if (n == 0) return -std::numeric_limits<T>::infinity();
  T peak = v[at(0)];
  for (std::size_t k = 1; k < n; ++k) peak = std::max(peak, v[at(k)]);
  if (std::isinf(peak)) return peak;
  return peak + std::log(sum4<T>(n, at, [&](Index i) { return std::exp(v[i] - peak); }));
}

template <class T, class At>
T reduceForward(Op op, const T* v, At at, std::size_t n) noexcept {
  const auto value = [v](Index i) { return v[i]; };
  const auto square = [v](Index i) { return v[i] * v[i]; };
  const T count = static_cast<T>(n);
  switch (op) {
    case Op::ReduceSum: return sum4<T>(n, at, value);
    case Op::ReduceSub: return n == 0 ? T(0) : v[at(0)] - sum4<T>(n - 1, [at](std::size_t k) { return at(k + 1); }, value);
    case Op::ReduceMul: {
      T product = 1;
      for (std::size_t k = 0; k < n; ++k) product *= v[at(k)];
      return product;
    }
    case Op::ReduceMean: return sum4<T>(n, at, value) / count;
    case Op::ReduceSumOfSquares: return sum4<T>(n, at, square);
    case Op::ReduceMeanSquares: return sum4<T>(n, at, square) / count;
    case Op::ReduceNegMean: return -sum4<T>(n, at, value) / count;
    case Op::LogSumExp: return logSumExpForward(v, at, n);
    default: return T(0);
  }
}

template <class T>
Value<T> reduce(Op op, RecordedList<T> xs) noexcept {
  Pool<T>& pool = Pool<T>::local();
  const T* v = pool.values();
  const T data = visitList(pool.links(), xs.offset, [&](auto at) { return reduceForward(op, v, at, xs.count); });
  return node(data, op, xs.offset, xs.count);
}

template <class T, class At, class F>
BURTORCH_INLINE void addEach(Sweep<T>& s, At at, std::size_t n, F delta) noexcept {
  for (std::size_t k = 0; k < n; ++k) s.add(at(k), delta(at(k)));
}

// d(prod)/dx_k is the product of the others: divide where no factor is zero; with one zero
// factor only that one gets a gradient; with two or more every gradient is zero.
template <class T>
BURTORCH_OUTLINE Index reduceMulBackward(bool* reached, Index low, Index floor, Index list, std::size_t n, T gi) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  visitList(s.links, list, [&](auto at) {
    std::size_t zeros = 0;
    T nonZero = 1;
    for (std::size_t k = 0; k < n; ++k) {
      const T x = s.v[at(k)];
      if (x == T(0)) ++zeros;
      else nonZero *= x;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const T x = s.v[at(k)];
      T d = 0;
      if (zeros == 0) d = gi * nonZero / x;
      else if (zeros == 1 && x == T(0)) d = gi * nonZero;
      s.add(at(k), d);
    }
  });
  return s.low;
}

template <class T>
BURTORCH_OUTLINE Index reduceBackward(bool* reached, Index low, Index floor, Op op, Index i, Index list, std::size_t n, T gi) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const T count = static_cast<T>(n);
  const T* v = s.v;
  visitList(s.links, list, [&](auto at) {
    switch (op) {
      case Op::ReduceSum: addEach(s, at, n, [&](Index) { return gi; }); break;
      case Op::ReduceSub:  // by position: x_1 may appear again among the subtrahends
        if (n == 0) break;
        s.add(at(0), gi);
        addEach(s, [at](std::size_t k) { return at(k + 1); }, n - 1, [&](Index) { return -gi; });
        break;
      case Op::ReduceMean: addEach(s, at, n, [&](Index) { return gi / count; }); break;
      case Op::ReduceSumOfSquares: addEach(s, at, n, [&](Index j) { return T(2) * gi * v[j]; }); break;
      case Op::ReduceMeanSquares: addEach(s, at, n, [&](Index j) { return T(2) * gi * v[j] / count; }); break;
      case Op::ReduceNegMean: addEach(s, at, n, [&](Index) { return -gi / count; }); break;
      case Op::LogSumExp: addEach(s, at, n, [&](Index j) { return gi * std::exp(v[j] - v[i]); }); break;
      default: break;
    }
  });
  return s.low;
}

}  // namespace detail

template <ValueList L> auto reduceSum(const L& xs) noexcept { return detail::reduce(Op::ReduceSum, toList(xs)); }
// x_1 - x_2 - ... - x_n
template <ValueList L> auto reduceSub(const L& xs) noexcept { return detail::reduce(Op::ReduceSub, toList(xs)); }
template <ValueList L> auto reduceMul(const L& xs) noexcept { return detail::reduce(Op::ReduceMul, toList(xs)); }
template <ValueList L> auto reduceMean(const L& xs) noexcept { return detail::reduce(Op::ReduceMean, toList(xs)); }
template <ValueList L> auto reduceSumOfSquares(const L& xs) noexcept { return detail::reduce(Op::ReduceSumOfSquares, toList(xs)); }
template <ValueList L> auto reduceMeanSquares(const L& xs) noexcept { return detail::reduce(Op::ReduceMeanSquares, toList(xs)); }
template <ValueList L> auto reduceNegativeMean(const L& xs) noexcept { return detail::reduce(Op::ReduceNegMean, toList(xs)); }
// log(sum exp x_i), computed around the largest x_i so that it does not overflow.
template <ValueList L> auto logSumExp(const L& xs) noexcept { return detail::reduce(Op::LogSumExp, toList(xs)); }

// Table 10. One recorded list feeds both reductions.
template <ValueList L>
auto reduceMeanAndMeanSquares(const L& xs) noexcept {
  const auto list = toList(xs);
  return std::pair{reduceMean(list), reduceMeanSquares(list)};
}

// mean(x^2) - mean(x)^2
template <ValueList L>
auto varianceBiased(const L& xs) noexcept {
  const auto [m, ms] = reduceMeanAndMeanSquares(xs);
  return ms - sqr(m);
}

// The unbiased variance, n/(n-1) times the biased one.
template <ValueList L>
auto variance(const L& xs) noexcept {
  const auto list = toList(xs);
  using T = ListScalar<L>;
  const T n = static_cast<T>(list.count);
  return mulByConstant(varianceBiased(list), n / (n - T(1)));
}

}  // namespace burtorch

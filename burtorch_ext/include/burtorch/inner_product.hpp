// Inner products x . w (+ bias) of two recorded lists (paper Table 8: innerProduct,
// innerProductWithBias): their record, forward and backward. Where both lists are runs of
// consecutive nodes, forward and backward are loops over contiguous values and gradients; a
// layer's rows (linear.hpp) use the same products.
#pragma once

#include <algorithm>

#include "burtorch/kernels.hpp"
#include "burtorch/reductions.hpp"
#include "burtorch/scratch.hpp"

namespace burtorch {

namespace detail {

// At link b of an inner-product node; the x list is at link a.
struct InnerProductRecord {
  Index n;
  Index weights;  // the offset of the w list
  Index bias;     // kNoIndex: none
};

// sum_k v[x(k)] * v[w(k)]: operand by operand, or over contiguous values where both lists are
// runs of consecutive nodes.
template <class T, class XAt, class WAt>
BURTORCH_INLINE T dotOf(const T* v, XAt x, WAt w, std::size_t n) noexcept {
  return sum4<T>(n, [](std::size_t k) { return k; }, [&](std::size_t k) { return v[x(k)] * v[w(k)]; });
}

template <class T>
BURTORCH_INLINE T dotOf(const T* v, RangeAt x, RangeAt w, std::size_t n) noexcept {
  return kernels::dot(v + x.first, v + w.first, n);
}

// The values of a list of runs, copied one after another into this thread's scratch buffer
// (valid until its next use): a product over them is then one product over contiguous values,
// its lanes added once, not once per run (the MLP's input: 16 embedding rows of 64 values).
template <class T>
const T* gathered(const T* v, RunsAt x, std::size_t n) noexcept {
  T* const out = kernels::scratch<T>(n);
  for (std::size_t r = 0; r < n / x.length; ++r) std::copy_n(v + x.firsts[r], x.length, out + r * x.length);
  return out;
}

template <class T>
T dotOf(const T* v, RunsAt x, RangeAt w, std::size_t n) noexcept {
  return kernels::dot(gathered(v, x, n), v + w.first, n);
}

template <class T>
T dotOf(const T* v, RangeAt x, RunsAt w, std::size_t n) noexcept {
  return dotOf(v, w, x, n);
}

template <class T>
Value<T> innerProductNode(RecordedList<T> x, RecordedList<T> w, Value<T> bias) noexcept {
  BURTORCH_ASSERT(x.count == w.count);
  Pool<T>& pool = Pool<T>::local();
  const T* v = pool.values();
  T data = visitList(pool.links(), x.offset, [&](auto xAt) {
    return visitList(pool.links(), w.offset, [&](auto wAt) { return dotOf(v, xAt, wAt, x.count); });
  });
  const bool withBias = bias.index() != kNoIndex;
  if (withBias) data += bias.data();
  const Index at = appendRecord<T>(InnerProductRecord{x.count, w.offset, bias.index()});
  return node(data, withBias ? Op::InnerProductWithBias : Op::InnerProduct, x.offset, at);
}

// The gradient of x . w over consecutive nodes x..x+n and w..w+n, a contiguous loop each.
template <class T>
BURTORCH_INLINE void addProductGradients(Sweep<T>& s, Index x, Index w, std::size_t n, T gi) noexcept {
  kernels::axpy(s.g + x, gi, s.v + w, n);
  kernels::axpy(s.g + w, gi, s.v + x, n);
  s.reach(x, n);
  s.reach(w, n);
}

// d(x . w): operand by operand, or a contiguous loop per run where both lists are runs.
template <class T, class XAt, class WAt>
BURTORCH_INLINE void productBackward(Sweep<T>& s, XAt xAt, WAt wAt, std::size_t n, T gi) noexcept {
  for (std::size_t k = 0; k < n; ++k) {
    const Index x = xAt(k), w = wAt(k);
    const T xv = s.v[x], wv = s.v[w];
    s.add(x, gi * wv);
    s.add(w, gi * xv);
  }
}

template <class T>
BURTORCH_INLINE void productBackward(Sweep<T>& s, RangeAt x, RangeAt w, std::size_t n, T gi) noexcept {
  addProductGradients(s, x.first, w.first, n, gi);
}

template <class T>
void productBackward(Sweep<T>& s, RunsAt x, RangeAt w, std::size_t n, T gi) noexcept {
  for (std::size_t r = 0; r < n / x.length; ++r) addProductGradients(s, x.firsts[r], w.first + static_cast<Index>(r * x.length), x.length, gi);
}

template <class T>
void productBackward(Sweep<T>& s, RangeAt x, RunsAt w, std::size_t n, T gi) noexcept {
  productBackward(s, w, x, n, gi);
}

template <class T>
BURTORCH_OUTLINE Index innerProductBackward(bool* reached, Index low, Index floor, Index xList, Index at, T gi) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const auto product = readRecord<InnerProductRecord>(s.links + at);
  visitList(s.links, xList, [&](auto xAt) {
    visitList(s.links, product.weights, [&](auto wAt) { productBackward(s, xAt, wAt, product.n, gi); });
  });
  if (product.bias != kNoIndex) s.addToLeafOrNode(product.bias, gi);
  return s.low;
}

}  // namespace detail

template <ValueList X, ValueList W>
auto innerProduct(const X& x, const W& w) noexcept {
  using T = ListScalar<X>;
  return detail::innerProductNode<T>(toList(x), toList(w), Value<T>());
}

template <ValueList X, ValueList W>
auto innerProductWithBias(const X& x, const W& w, Value<ListScalar<X>> bias) noexcept {
  using T = ListScalar<X>;
  return detail::innerProductNode<T>(toList(x), toList(w), bias);
}

}  // namespace burtorch

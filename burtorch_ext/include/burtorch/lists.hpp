// Operand lists of n-ary nodes. An n-ary node does not copy its operands: it records their
// indices once in the pool's link array, as one word for a run of consecutive nodes (a layer's
// weights, a layer's outputs), as equal-length runs (embedding rows looked up by a context), or
// one word per operand otherwise. The same recorded list can feed many nodes (the input of every
// neuron of a layer), and views over Values (a head of a token's query, a column of values
// across tokens) record straight from the caller's handles. Runs of consecutive nodes are what
// lets inner products work on contiguous arrays of values and gradients.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstring>
#include <ranges>
#include <span>
#include <type_traits>

#include "burtorch/value.hpp"

namespace burtorch {

// Every stride-th handle starting at first: a column of a row-major block of Values.
template <class T>
struct StridedValues {
  using Scalar = T;
  const Value<T>* first = nullptr;
  std::size_t count = 0;
  std::ptrdiff_t stride = 1;

  Value<T> operator[](std::size_t k) const noexcept { return first[static_cast<std::ptrdiff_t>(k) * stride]; }
  std::size_t size() const noexcept { return count; }
};

// Equal-length runs of consecutive nodes, one after the other: the rows of an embedding table
// that a context of tokens looks up, concatenated without copying a node.
template <class T>
struct Runs {
  using Scalar = T;
  std::span<const Index> firsts;  // the first node of each run
  std::size_t length = 0;          // nodes per run

  Value<T> operator[](std::size_t k) const noexcept {
    return Value<T>::fromIndex(firsts[k / length] + static_cast<Index>(k % length));
  }
  std::size_t size() const noexcept { return firsts.size() * length; }
};

// A list already recorded in the pool; valid until the pool is rewound below it.
template <class T>
struct RecordedList {
  using Scalar = T;
  Index offset = 0;
  Index count = 0;

  std::size_t size() const noexcept { return count; }
};

template <class V>
inline constexpr bool kIsValue = false;
template <class T>
inline constexpr bool kIsValue<Value<T>> = true;

// Any contiguous container of Values: std::vector, std::array, std::span.
template <class R>
concept ValueRange = std::ranges::contiguous_range<const R> && kIsValue<std::ranges::range_value_t<R>>;

namespace detail {

// Operand k of a list stored as a run of consecutive nodes, or as one index per operand.
struct RangeAt {
  Index first;
  BURTORCH_INLINE Index operator()(std::size_t k) const noexcept { return first + static_cast<Index>(k); }
};
struct ListedAt {
  const Index* at;
  BURTORCH_INLINE Index operator()(std::size_t k) const noexcept { return at[k]; }
};
// Stored as [kRunsMarker, length, first of run 0, first of run 1, ...].
struct RunsAt {
  const Index* firsts;
  Index length;
  BURTORCH_INLINE Index operator()(std::size_t k) const noexcept {
    return firsts[k / length] + static_cast<Index>(k % length);
  }
};

// Whether the list whose first link is `word` is one run of consecutive nodes (RangeAt): the
// case the fused layers' backward takes over contiguous arrays.
BURTORCH_INLINE bool isOneRun(Index word) noexcept { return (word & kRangeFlag) && word != kRunsMarker; }

template <class F>
BURTORCH_INLINE decltype(auto) visitList(const Index* links, Index offset, F&& f) {
  const Index word = links[offset];
  if (word == kRunsMarker) [[unlikely]] return f(RunsAt{links + offset + 2, links[offset + 1]});
  if (word & kRangeFlag) return f(RangeAt{word & ~kRangeFlag});
  return f(ListedAt{links + offset});
}

template <class T>
RecordedList<T> recordRange(Index first, std::size_t count) noexcept {
  Pool<T>& pool = Pool<T>::local();
  const Index at = pool.appendLinks(1);
  pool.links()[at] = kRangeFlag | first;
  return {at, static_cast<Index>(count)};
}

}  // namespace detail

template <class T>
RecordedList<T> toList(RecordedList<T> xs) noexcept {
  return xs;
}

template <class T>
RecordedList<T> toList(NodeRange<T> xs) noexcept {
  return detail::recordRange<T>(xs.first, xs.count);
}

template <class T>
RecordedList<T> toList(StridedValues<T> xs) noexcept {
  if (xs.count == 0) return detail::recordRange<T>(0, 0);
  Pool<T>& pool = Pool<T>::local();
  const Index at = pool.appendLinks(xs.count);
  Index* out = pool.links() + at;
  for (std::size_t k = 0; k < xs.count; ++k) out[k] = xs[k].index();
  return {at, static_cast<Index>(xs.count)};
}

template <class T>
RecordedList<T> toList(Runs<T> xs) noexcept {
  if (xs.size() == 0) return detail::recordRange<T>(0, 0);
  if (xs.firsts.size() == 1) return detail::recordRange<T>(xs.firsts[0], xs.length);
  Pool<T>& pool = Pool<T>::local();
  const Index at = pool.appendLinks(2 + xs.firsts.size());
  Index* out = pool.links() + at;
  out[0] = kRunsMarker;
  out[1] = static_cast<Index>(xs.length);
  std::memcpy(out + 2, xs.firsts.data(), xs.firsts.size_bytes());
  return {at, static_cast<Index>(xs.size())};
}

namespace detail {

// Any bit set where a handle is not the first's index + k. No early exit, an OR of words, and k
// an Index: the compiler vectorises the whole scan in 32-bit lanes (a 64-bit k halves them), and
// a run is the common case.
template <class T>
Index offRun(std::span<const Value<T>> handles) noexcept {
  const Index first = handles[0].index(), n = static_cast<Index>(handles.size());
  Index off = 0;
  for (Index k = 1; k < n; ++k) off |= (handles[k].index() - first) ^ k;
  return off;
}

}  // namespace detail

// Handles of consecutive nodes (a layer's outputs) are recorded as one range word.
template <ValueRange R>
auto toList(const R& xs) noexcept {
  using T = typename std::ranges::range_value_t<R>::Scalar;
  const std::span<const Value<T>> handles(xs);
  if (handles.empty()) return detail::recordRange<T>(0, 0);
  if (detail::offRun(handles) == 0) return detail::recordRange<T>(handles[0].index(), handles.size());
  Pool<T>& pool = Pool<T>::local();
  const Index at = pool.appendLinks(handles.size());
  std::memcpy(pool.links() + at, handles.data(), handles.size() * sizeof(Index));
  return RecordedList<T>{at, static_cast<Index>(handles.size())};
}

// Whether the handles are consecutive nodes (a layer's outputs), which a fused block reads as arrays.
template <class T>
bool consecutive(std::span<const Value<T>> xs) noexcept {
  return xs.empty() || detail::offRun(xs) == 0;
}

// What n-ary operators accept: anything toList() records.
template <class L>
concept ValueList = requires(const L& xs) { toList(xs); };

template <ValueList L>
using ListScalar = typename decltype(toList(std::declval<const L&>()))::Scalar;

// Lists whose elements can be read one by one: containers of Values, NodeRange, StridedValues.
template <class L>
concept IndexableValues = requires(const L& xs, std::size_t k) {
  { xs[k] } -> std::convertible_to<Value<typename std::remove_cvref_t<decltype(xs[k])>::Scalar>>;
  { xs.size() } -> std::convertible_to<std::size_t>;
};

template <IndexableValues L>
using ElementScalar = typename std::remove_cvref_t<decltype(std::declval<const L&>()[0])>::Scalar;

// Records xs now, so that several nodes can share one copy of the indices.
template <ValueList L>
auto record(const L& xs) noexcept {
  return toList(xs);
}

}  // namespace burtorch

// Value<T>: a handle to one scalar node of this thread's pool. It holds only the node's index,
// so copying it is free and a span of Values is a span of indices.
#pragma once

#include <type_traits>

#include "burtorch/pool.hpp"

namespace burtorch {

template <class T>
class Value {
 public:
  using Scalar = T;

  Value() = default;
  // A leaf: an input or a parameter.
  BURTORCH_INLINE explicit Value(T data) noexcept : index_(Pool<T>::local().push(data, Op::Leaf)) {}

  static Value fromIndex(Index index) noexcept {
    Value v;
    v.index_ = index;
    return v;
  }

  Index index() const noexcept { return index_; }
  bool valid() const noexcept { return index_ < Pool<T>::local().size(); }

  T data() const noexcept { return Pool<T>::local().values()[checked()]; }
  T grad() const noexcept { return Pool<T>::local().grads()[checked()]; }
  Op op() const noexcept { return Pool<T>::local().ops()[checked()]; }
  void setData(T data) const noexcept { Pool<T>::local().values()[checked()] = data; }
  void setGrad(T grad) const noexcept { Pool<T>::local().grads()[checked()] = grad; }

  friend bool operator==(Value, Value) = default;

 private:
  Index checked() const noexcept {
    BURTORCH_ASSERT(valid());
    return index_;
  }

  Index index_ = kNoIndex;
};

static_assert(sizeof(Value<double>) == sizeof(Index) && std::is_standard_layout_v<Value<double>>,
              "a span of Values must be a span of indices");
static_assert(std::is_trivially_copyable_v<Value<double>>);

// Consecutive nodes [first, first + count): the parameters of a layer, a row of an embedding.
template <class T>
struct NodeRange {
  Index first = 0;
  Index count = 0;

  Value<T> operator[](std::size_t k) const noexcept { return Value<T>::fromIndex(first + static_cast<Index>(k)); }
  std::size_t size() const noexcept { return count; }
};

// Leaves with the given values, created consecutively.
template <class T>
NodeRange<T> leaves(std::size_t count, T data = T(0)) noexcept {
  Pool<T>& pool = Pool<T>::local();
  pool.reserve(pool.size() + count);
  const auto first = static_cast<Index>(pool.size());
  for (std::size_t k = 0; k < count; ++k) pool.push(data, Op::Leaf);
  return {first, static_cast<Index>(count)};
}

template <class T>
void zeroGrad(NodeRange<T> range) noexcept {
  Pool<T>::local().zeroGrad(range.first, range.count);
}

// Zeroes the gradients of the nodes first..last, both included.
template <class T>
void zeroGrad(Value<T> first, Value<T> last) noexcept {
  BURTORCH_ASSERT(first.index() <= last.index());
  Pool<T>::local().zeroGrad(first.index(), last.index() - first.index() + 1);
}

}  // namespace burtorch

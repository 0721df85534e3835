// The state of one backward sweep (backward.hpp runs it), through which every derivative adds
// its terms: the scalar operators' in backward.hpp, the n-ary operators' and the fused layers'
// next to their forward.
#pragma once

#include <algorithm>
#include <cstddef>

#include "burtorch/pool.hpp"

namespace burtorch::detail {

// The main loop keeps a Sweep in registers and never takes its address. An out-of-line n-ary
// case gets the flags, `low` and `floor` as arguments, finds the pool's arrays itself, and
// returns the new `low`: passed whole, in memory, the struct would be stored field by field and
// read back 16 bytes at a time, and each such load would wait for the stores to retire.
template <class T>
struct Sweep {
  T* g;
  const T* v;
  const Index* links;
  bool* reached;
  Index low;    // the lowest node flagged so far: the sweep stops there
  Index floor;  // nodes below are leaves: never visited

  static Sweep resume(bool* reached, Index low, Index floor) noexcept {
    Pool<T>& pool = Pool<T>::local();
    return {pool.grads(), pool.values(), pool.links(), reached, low, floor};
  }

  BURTORCH_INLINE void add(Index j, T delta) noexcept {
    g[j] += delta;
    reached[j] = true;
    low = std::min(low, j);
  }

  // As add(), without the flag where j is one of the leading leaves.
  BURTORCH_INLINE void addToLeafOrNode(Index j, T delta) noexcept {
    if (j < floor) g[j] += delta;
    else add(j, delta);
  }

  // Flags nodes [first, first + n), unless all of them are leading leaves.
  BURTORCH_INLINE void reach(Index first, std::size_t n) noexcept {
    if (first + n <= floor) return;
    std::fill_n(reached + first, n, true);
    low = std::min(low, first);
  }
};

// A fused layer's outputs are consecutive nodes, and every user of any of them comes after the
// last, so when the sweep reaches the highest reached output all their gradients are final:
// that output runs the backward of the whole block and unflags the others. The sweep then goes
// on from the block's first output, without testing the others' flags one by one; nothing below
// `first` was flagged if `low` was above it.
struct Resume {
  Index low, first;
};

template <class T>
BURTORCH_INLINE Resume resumeBelow(const Sweep<T>& s, Index first) noexcept {
  return {std::min(s.low, first), first};
}

}  // namespace burtorch::detail

// Records: fixed-layout data in the pool's link array beside the operand lists. An operator's
// constant (x * c, x + c, x^c) is a record of one scalar; a fused layer's node keeps a record of
// the operands its outputs share (LinearRecord, LayerNormRecord, AttentionRecord,
// InnerProductRecord), defined, written and read next to that layer's forward and backward.
// A record is copied whole, bit for bit: link words are 4-byte aligned where a double needs 8,
// and one copy lets the compiler keep the fields in registers.
#pragma once

#include <cstring>
#include <type_traits>

#include "burtorch/pool.hpp"

namespace burtorch::detail {

template <class R>
inline constexpr std::size_t kWords = sizeof(R) / sizeof(Index);

template <class R>
BURTORCH_INLINE R readRecord(const Index* words) noexcept {
  static_assert(std::is_trivially_copyable_v<R> && sizeof(R) % sizeof(Index) == 0);
  R r;
  std::memcpy(&r, words, sizeof(R));
  return r;
}

template <class R>
BURTORCH_INLINE void writeRecord(Index* words, const R& r) noexcept {
  static_assert(std::is_trivially_copyable_v<R> && sizeof(R) % sizeof(Index) == 0);
  std::memcpy(words, &r, sizeof(R));
}

// Appends r to the link array of the pool of scalars T; returns its offset.
template <class T, class R>
BURTORCH_INLINE Index appendRecord(const R& r) noexcept {
  Pool<T>& pool = Pool<T>::local();
  const Index at = pool.appendLinks(kWords<R>);
  writeRecord(pool.links() + at, r);
  return at;
}

}  // namespace burtorch::detail

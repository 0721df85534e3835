// Two lists of nodes summed element by element as one fused block (Op::AddBlock): the GPT's
// residual connections and its token-plus-position embeddings. As one Op::Add per element they
// made about 160,000 nodes of a b = 64 step, each created, flagged and visited alone; as a
// block they share one record, and forward and backward are one pass over arrays. Each value is
// the same sum, and each gradient gets the same terms in the same order, as the Add nodes would
// give it: the same bits.
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <type_traits>

#include "burtorch/lists.hpp"
#include "burtorch/simd.hpp"
#include "burtorch/sweep.hpp"

namespace burtorch {

namespace detail {

// What the outputs of a block of sums share, at link a of each of them.
struct AddBlockRecord {
  Index count;
  Index x, y;         // the operands' lists (lists.hpp)
  Index firstOutput;  // output k = x[k] + y[k]; the outputs are consecutive nodes
};

// Flags the nodes of a list of n, except leading leaves (an embedding's rows: never visited).
template <class T, class At>
BURTORCH_INLINE void reachList(Sweep<T>& s, At at, std::size_t n) noexcept {
  if constexpr (std::is_same_v<At, RangeAt>) {
    s.reach(at.first, n);
  } else {
    for (std::size_t k = 0; k < n; ++k) {
      const Index j = at(k);
      if (j < s.floor) continue;
      s.reached[j] = true;
      s.low = std::min(s.low, j);
    }
  }
}

// Node i is the highest reached output of a block of sums (see Resume); outputs the root does
// not reach contribute nothing. Where x and y are two runs that do not overlap and every
// output is reached, no element gets two terms: one pass in order over contiguous arrays. Else
// output by output from the top, as the sweep would visit the Add nodes: an operand listed twice
// (a token's embedding row) gets its terms in the same order.
template <class T>
BURTORCH_OUTLINE Resume addBlockBackward(bool* reached, Index low, Index floor, Index i, Index at) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const auto sum = readRecord<AddBlockRecord>(s.links + at);
  const Index y0 = sum.firstOutput;
  const std::size_t top = i - y0;
  const bool dense = top + 1 == sum.count && std::memchr(s.reached + y0, 0, top) == nullptr;
  visitList(s.links, sum.x, [&](auto xAt) {
    visitList(s.links, sum.y, [&](auto yAt) {
      constexpr bool kRuns = std::is_same_v<decltype(xAt), RangeAt> && std::is_same_v<decltype(yAt), RangeAt>;
      if constexpr (kRuns) {
        if (dense && (xAt.first + sum.count <= yAt.first || yAt.first + sum.count <= xAt.first)) {
          const T* BURTORCH_RESTRICT gy = s.g + y0;
          T* BURTORCH_RESTRICT gx = s.g + xAt.first;
          T* BURTORCH_RESTRICT gz = s.g + yAt.first;
          for (std::size_t k = 0; k < sum.count; ++k) {
            gx[k] += gy[k];
            gz[k] += gy[k];
          }
          reachList(s, xAt, sum.count);
          reachList(s, yAt, sum.count);
          return;
        }
      }
      for (std::size_t k = top + 1; k-- > 0;) {
        if (k != top && !s.reached[y0 + k]) continue;
        s.g[xAt(k)] += s.g[y0 + k];
        s.g[yAt(k)] += s.g[y0 + k];
      }
      reachList(s, xAt, top + 1);
      reachList(s, yAt, top + 1);
    });
  });
  std::fill(s.reached + y0, s.reached + i, false);
  return resumeBelow(s, y0);
}

}  // namespace detail

// out[k] = x[k] + y[k], one block of nodes (Op::AddBlock). x and y: any lists of one length
// (lists.hpp: a layer's outputs are one run, a token's embedding rows Runs); out may be the
// caller's buffer for x's or y's handles, as both are recorded before it is written.
template <class T, ValueList X, ValueList Y>
void addBlock(const X& x, const Y& y, std::span<Value<T>> out) noexcept {
  Pool<T>& pool = Pool<T>::local();
  const RecordedList<T> xs = record(x), ys = record(y);
  BURTORCH_ASSERT(xs.count == ys.count && out.size() == xs.count);
  if (out.empty()) return;
  detail::AddBlockRecord sum{xs.count, xs.offset, ys.offset, 0};
  const Index at = pool.appendLinks(detail::kWords<detail::AddBlockRecord>);
  sum.firstOutput = pool.pushRun(out.size(), Op::AddBlock, at, 0);
  detail::writeRecord(pool.links() + at, sum);
  T* v = pool.values();
  const Index y0 = sum.firstOutput;
  detail::visitList(pool.links(), sum.x, [&](auto xAt) {
    detail::visitList(pool.links(), sum.y, [&](auto yAt) {
      if constexpr (std::is_same_v<decltype(xAt), detail::RangeAt> && std::is_same_v<decltype(yAt), detail::RangeAt>) {
        const T* BURTORCH_RESTRICT a = v + xAt.first;
        const T* BURTORCH_RESTRICT b = v + yAt.first;
        T* BURTORCH_RESTRICT sums = v + y0;
        for (std::size_t k = 0; k < out.size(); ++k) sums[k] = a[k] + b[k];
      } else {
        for (std::size_t k = 0; k < out.size(); ++k) v[y0 + k] = v[xAt(k)] + v[yAt(k)];
      }
    });
  });
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = Value<T>::fromIndex(y0 + static_cast<Index>(k));
}

}  // namespace burtorch

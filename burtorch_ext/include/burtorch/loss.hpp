// Softmax and softmax cross-entropy, built on logSumExp so that large logits do not overflow;
// and the cross-entropies of a block of rows of logits as one fused block (Op::CrossEntropyBlock).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "burtorch/reductions.hpp"
#include "burtorch/simd.hpp"
#include "burtorch/tanh_block.hpp"

namespace burtorch {

// -log softmax(logits)[target] = logSumExp(logits) - logits[target]
template <class L>
  requires IndexableValues<L> && ValueList<L>
auto crossEntropy(const L& logits, std::size_t target) noexcept {
  BURTORCH_ASSERT(target < logits.size());
  return logSumExp(logits) - logits[target];
}

// out[i] = exp(x[i] - logSumExp(x))
template <class L>
  requires IndexableValues<L> && ValueList<L>
void softmax(const L& x, std::span<Value<ElementScalar<L>>> out) noexcept {
  BURTORCH_ASSERT(out.size() == x.size());
  const auto lse = logSumExp(x);
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = exp(x[i] - lse);
}

namespace detail {

// What the losses of a cross-entropy block share, at link a of each of them; then, in the link
// array, each row's target, and (aligned for T) each row's softmax, which the backward reads:
// d loss_row / d logits = softmax - onehot(target), so no e^x is taken twice.
template <class T>
struct CrossEntropyRecord {
  Index rows, vocab;
  Index rowsPerLoss;  // loss s: the mean of rows s rowsPerLoss .. (s + 1) rowsPerLoss - 1
  Index firstLogit;   // the logits: one run, row after row
  Index firstOutput;  // the losses are consecutive nodes

  std::size_t words() const noexcept {
    // The softmax, and up to alignof(T) - 1 bytes before it to align it (FP64: one word).
    const std::size_t bytes = std::size_t{rows} * vocab * sizeof(T) + alignof(T) - 1;
    return kWords<CrossEntropyRecord> + rows + (bytes + sizeof(Index) - 1) / sizeof(Index);
  }
  static Index* targets(Index* record) noexcept { return record + kWords<CrossEntropyRecord>; }
  static const Index* targets(const Index* record) noexcept { return record + kWords<CrossEntropyRecord>; }
  // The link array's words are 4-byte aligned, and it moves only to memory aligned as before.
  T* softmax(const Index* record) const noexcept {
    auto at = reinterpret_cast<std::uintptr_t>(targets(record) + rows);
    at = (at + alignof(T) - 1) / alignof(T) * alignof(T);
    return reinterpret_cast<T*>(at);
  }
};

// One row: p = softmax(logits) into p; returns log-sum-exp(logits). e^x over the row at once
// (FP32: eight lanes, tanh_block.hpp), around its largest logit so that it does not overflow.
template <class T>
BURTORCH_INLINE T softmaxRow(const T* BURTORCH_RESTRICT logits, std::size_t n, T* BURTORCH_RESTRICT p) noexcept {
  const T peak = *std::max_element(logits, logits + n);
  for (std::size_t k = 0; k < n; ++k) p[k] = logits[k] - peak;
  kernels::expMany(p, n);
  T sum = 0;
  for (std::size_t k = 0; k < n; ++k) sum += p[k];
  const T inverse = T(1) / sum;
  for (std::size_t k = 0; k < n; ++k) p[k] *= inverse;
  return peak + std::log(sum);
}

// Node i is the highest reached loss of a cross-entropy block (see Resume); losses the root
// does not reach contribute nothing. Each reached loss s, with gradient g, gives each of its
// rows' logits g / rowsPerLoss (softmax - onehot(target)).
template <class T>
BURTORCH_OUTLINE Resume crossEntropyBackward(bool* reached, Index low, Index floor, Index i, Index at) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const Index* record = s.links + at;
  const auto ce = readRecord<CrossEntropyRecord<T>>(record);
  const Index y0 = ce.firstOutput;
  const std::size_t top = i - y0, vocab = ce.vocab, perLoss = ce.rowsPerLoss;
  const Index* targets = CrossEntropyRecord<T>::targets(record);
  const T* softmax = ce.softmax(record);
  for (std::size_t loss = 0; loss <= top; ++loss) {
    if (loss != top && !s.reached[y0 + loss]) continue;
    const T g = s.g[y0 + loss] / static_cast<T>(perLoss);
    for (std::size_t r = loss * perLoss; r < (loss + 1) * perLoss; ++r) {
      const T* BURTORCH_RESTRICT p = softmax + r * vocab;
      T* BURTORCH_RESTRICT dLogits = s.g + ce.firstLogit + r * vocab;
      const std::size_t target = targets[r];
      for (std::size_t k = 0; k < vocab; ++k) dLogits[k] += g * (p[k] - (k == target ? T(1) : T(0)));
    }
    s.reach(ce.firstLogit + static_cast<Index>(loss * perLoss * vocab), perLoss * vocab);
  }
  std::fill(s.reached + y0, s.reached + i, false);
  return resumeBelow(s, y0);
}

}  // namespace detail

// losses[s] = the mean over rows s rowsPerLoss .. (s + 1) rowsPerLoss - 1 of the rows'
// cross-entropies, row r's -log softmax(logits row r)[targetOf(r)]: the GPT's loss of each
// window. logits: rows of vocab handles. Where they are one run of nodes (a layer's outputs), the
// losses are one block (Op::CrossEntropyBlock): a softmax per row, one e^x per logit, and
// no node per row; its bits differ from the nodes' (another e^x, another order of the sums), within
// 1e-6 relative. Else one crossEntropy node per row and a reduceMean per loss.
template <class T, class TargetOf>
void crossEntropyMeans(std::span<const Value<T>> logits, std::size_t vocab, std::size_t rowsPerLoss, TargetOf targetOf,
                       std::span<Value<T>> losses) noexcept {
  const std::size_t rows = losses.size() * rowsPerLoss;
  BURTORCH_ASSERT(vocab > 0 && rowsPerLoss > 0 && logits.size() == rows * vocab);
  if (rows == 0) return;
  if (!consecutive(logits)) {
    std::vector<Value<T>> rowLosses(rowsPerLoss);
    for (std::size_t loss = 0; loss < losses.size(); ++loss) {
      for (std::size_t k = 0; k < rowsPerLoss; ++k) {
        const std::size_t r = loss * rowsPerLoss + k;
        rowLosses[k] = crossEntropy(logits.subspan(r * vocab, vocab), targetOf(r));
      }
      losses[loss] = reduceMean(rowLosses);
    }
    return;
  }
  Pool<T>& pool = Pool<T>::local();
  detail::CrossEntropyRecord<T> ce{static_cast<Index>(rows), static_cast<Index>(vocab), static_cast<Index>(rowsPerLoss),
                                   logits[0].index(), 0};
  const Index at = pool.appendLinks(ce.words());
  ce.firstOutput = pool.pushRun(losses.size(), Op::CrossEntropyBlock, at, 0);
  Index* record = pool.links() + at;
  detail::writeRecord(record, ce);
  Index* targets = detail::CrossEntropyRecord<T>::targets(record);
  T* softmax = ce.softmax(record);
  T* v = pool.values();
  for (std::size_t loss = 0; loss < losses.size(); ++loss) {
    T total = 0;
    for (std::size_t r = loss * rowsPerLoss; r < (loss + 1) * rowsPerLoss; ++r) {
      const std::size_t target = targetOf(r);
      BURTORCH_ASSERT(target < vocab);
      targets[r] = static_cast<Index>(target);
      const T* row = v + ce.firstLogit + r * vocab;
      total += detail::softmaxRow(row, vocab, softmax + r * vocab) - row[target];
    }
    v[ce.firstOutput + loss] = total / static_cast<T>(rowsPerLoss);
    losses[loss] = Value<T>::fromIndex(ce.firstOutput + static_cast<Index>(loss));
  }
}

}  // namespace burtorch

// Softmax and softmax cross-entropy, built on logSumExp so that large logits do not overflow.
#pragma once

#include <span>

#include "burtorch/reductions.hpp"

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

}  // namespace burtorch

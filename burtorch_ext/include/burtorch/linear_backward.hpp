// The backward of a layer's rows (Op::LinearRow, linear_rows.hpp): one strategy per shape of
// what the root reaches and of how the tokens' inputs are laid out, chosen in linearRowBackward.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "burtorch/inner_product.hpp"
#include "burtorch/linear_block_backward.hpp"
#include "burtorch/linear_rows.hpp"
#include "burtorch/optim.hpp"
#include "burtorch/sweep.hpp"

namespace burtorch {

namespace detail {

// Rows of axpy() into one y, applied kManyRows at a time (kernels::axpyMany) in the order given.
template <class T>
class AxpyQueue {
 public:
  AxpyQueue(T* y, std::size_t n) noexcept : y_(y), n_(n) {}

  BURTORCH_INLINE void add(T a, const T* x) noexcept {
    a_[count_] = a;
    x_[count_] = x;
    used_ = true;
    if (++count_ == kernels::kManyRows) flush();
  }

  BURTORCH_INLINE void flush() noexcept {
    if (count_ != 0) kernels::axpyMany(y_, a_, x_, count_, n_);
    count_ = 0;
  }

  bool used() const noexcept { return used_; }

 private:
  T* y_;
  std::size_t n_;
  T a_[kernels::kManyRows];
  const T* x_[kernels::kManyRows];
  std::size_t count_ = 0;
  bool used_ = false;
};

// Every token's input is a run (input(t): its first node): a weight row's gradient takes all the
// tokens in one pass, an input's gradient all the rows. Each gradient still adds its terms in
// the order the rows' backward would one by one: tokens from the last down, rows from the last
// down.
template <class T, class InputRun, class Live, class AffineGrad>
BURTORCH_INLINE void linearRunsBackward(Sweep<T>& s, const LinearRecord& layer, std::size_t tokens, InputRun input, Live live, AffineGrad affineGrad) noexcept {
  const bool withBias = layer.hasBias();
  for (std::size_t j = layer.rows; j-- > 0;) {
    AxpyQueue<T> row(s.g + layer.weights(j), layer.n);
    const Index bias = layer.firstBias + static_cast<Index>(j);
    T biasGrad = withBias ? s.g[bias] : T(0);  // in a register: the tokens' terms form one chain
    for (std::size_t t = tokens; t-- > 0;) {
      const Index y = layer.output(t, j);
      if (!live(y)) continue;
      const T gy = affineGrad(y);
      row.add(gy, s.v + input(t));
      biasGrad += gy;
    }
    row.flush();
    if (!row.used()) continue;
    s.reach(layer.weights(j), layer.n);
    if (withBias) {
      s.g[bias] = biasGrad;
      s.reach(bias, 1);
    }
  }
  for (std::size_t t = tokens; t-- > 0;) {
    AxpyQueue<T> x(s.g + input(t), layer.n);
    for (std::size_t j = layer.rows; j-- > 0;) {
      const Index y = layer.output(t, j);
      if (live(y)) x.add(affineGrad(y), s.v + layer.weights(j));
    }
    x.flush();
    if (x.used()) s.reach(input(t), layer.n);
  }
}

// y0 gets the axpy() rows x with the coefficients a0; y1, unless null, those with a1. Not forced
// inline: called from both of the dense backward's passes, one copy of the kernels serves both.
template <class T>
void axpyIntoOneOrTwo(T* y0, T* y1, const T* a0, const T* a1, const T* const* x, std::size_t count, std::size_t n) noexcept {
  if (y1 == nullptr) kernels::axpyMany(y0, a0, x, count, n);
  else kernels::axpyManyPair(y0, y1, a0, a1, x, count, n);
}

// The weight rows' and biases' gradients, two rows at a time over the tokens' inputs.
// byRow[j tokens + u] is the gradient before the activation of row j of token tokens - 1 - u.
template <class T, class InputRun>
BURTORCH_INLINE void linearDenseWeightsBackward(Sweep<T>& s, const LinearRecord& layer, std::size_t tokens, InputRun input, const T* byRow) noexcept {
  const T* x[kernels::kManyRows];
  for (std::size_t j = layer.rows; j > 0;) {
    const std::size_t pair = std::min<std::size_t>(j, 2);
    j -= pair;
    const std::size_t hi = j + pair - 1;  // the rows hi and j (the same row when alone)
    const T* const a0 = byRow + hi * tokens;
    const T* const a1 = byRow + j * tokens;
    for (std::size_t u = 0; u < tokens; u += kernels::kManyRows) {
      const std::size_t count = std::min(tokens - u, kernels::kManyRows);
      for (std::size_t c = 0; c < count; ++c) x[c] = s.v + input(tokens - 1 - u - c);
      axpyIntoOneOrTwo(s.g + layer.weights(hi), pair == 2 ? s.g + layer.weights(j) : nullptr, a0 + u, a1 + u, x, count, layer.n);
    }
    s.reach(layer.weights(j), pair * layer.n);
    if (layer.hasBias()) {
      // In registers: the tokens' terms form one chain per bias.
      T biasGrad[2] = {s.g[layer.firstBias + hi], s.g[layer.firstBias + j]};
      for (std::size_t u = 0; u < tokens; ++u) {
        biasGrad[0] += a0[u];
        biasGrad[1] += a1[u];
      }
      s.g[layer.firstBias + hi] = biasGrad[0];
      if (pair == 2) s.g[layer.firstBias + j] = biasGrad[1];
      s.reach(layer.firstBias + static_cast<Index>(j), pair);
    }
  }
}

// The tokens' inputs' gradients, two tokens at a time over the weight rows.
// byToken[t rows + u] is the gradient before the activation of row rows - 1 - u of token t.
template <class T, class InputRun>
BURTORCH_INLINE void linearDenseInputsBackward(Sweep<T>& s, const LinearRecord& layer, std::size_t tokens, InputRun input, const T* byToken) noexcept {
  const std::size_t rows = layer.rows;
  const T* x[kernels::kManyRows];
  for (std::size_t t = tokens; t > 0;) {
    // Two tokens' gradients in one pass only where their inputs do not overlap.
    const bool apart = t >= 2 && (input(t - 1) >= input(t - 2) + layer.n || input(t - 2) >= input(t - 1) + layer.n);
    const std::size_t pair = apart ? 2 : 1;
    t -= pair;
    const std::size_t hi = t + pair - 1;
    for (std::size_t u = 0; u < rows; u += kernels::kManyRows) {
      const std::size_t count = std::min(rows - u, kernels::kManyRows);
      for (std::size_t c = 0; c < count; ++c) x[c] = s.v + layer.weights(rows - 1 - u - c);
      axpyIntoOneOrTwo(s.g + input(hi), pair == 2 ? s.g + input(t) : nullptr, byToken + hi * rows + u, byToken + t * rows + u, x, count, layer.n);
    }
    s.reach(input(hi), layer.n);
    if (pair == 2) s.reach(input(t), layer.n);
  }
}

// Where the root reaches every row of every token (as in a transformer), the gradients go two
// at a time through one pass over their shared operands (kernels::axpyManyPair). The terms of
// each gradient come in the same order as in linearRunsBackward. The gradients before the
// activation are computed once, into two copies laid out in the order each pass reads them.
template <class T, class InputRun, class AffineGrad>
BURTORCH_INLINE void linearDenseBackward(Sweep<T>& s, const LinearRecord& layer, std::size_t tokens, InputRun input, AffineGrad affineGrad) noexcept {
  const std::size_t rows = layer.rows;
  static thread_local std::vector<T> scratch BURTORCH_INITIAL_EXEC;  // grows to the largest layer, then stays
  if (scratch.size() < 2 * tokens * rows) scratch.resize(2 * tokens * rows);
  T* const byRow = scratch.data();
  T* const byToken = byRow + tokens * rows;
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t j = 0; j < rows; ++j) {
      const T gy = affineGrad(layer.output(t, j));
      byRow[j * tokens + (tokens - 1 - t)] = gy;
      byToken[t * rows + (rows - 1 - j)] = gy;
    }
  linearDenseWeightsBackward(s, layer, tokens, input, byRow);
  linearDenseInputsBackward(s, layer, tokens, input, byToken);
}

// One token whose input is in runs, every row reached, in a step's last sweep (optim.hpp's
// SgdInBackward, the weights' gradients zero): the input's gradient and the weights' step in one
// pass over the weights (kernels::axpyManyAndDescend), their gradients left zero. The MLP's b = 1
// step then reads its hidden weights twice and writes them once, as a step must at least. The
// terms of the input's gradient come as in linearDenseBackward: rows from the last down.
template <class T>
BURTORCH_INLINE void linearTokenStepBackward(Sweep<T>& s, const LinearRecord& layer, const Index* lists, T step) noexcept {
  const std::size_t rows = layer.rows, n = layer.n;
  const InputRows<T> values{const_cast<T*>(s.v), s.links, lists}, grads{s.g, s.links, lists};
  T a[kernels::kManyRows];  // a[c]: row rows - 1 - u - c's gradient before the activation
  T* w[kernels::kManyRows];
  for (std::size_t u = 0; u < rows; u += kernels::kManyRows) {
    const std::size_t count = std::min(rows - u, kernels::kManyRows);
    for (std::size_t c = 0; c < count; ++c) {
      const Index y = layer.output(0, rows - 1 - u - c);
      a[c] = activationGradient(layer.activation, s.v[y], s.g[y]);
      if (layer.hasBias()) s.addToLeafOrNode(layer.firstBias + static_cast<Index>(rows - 1 - u - c), a[c]);
    }
    for (std::size_t k = 0; k < n;) {
      std::size_t len, sameLen;  // the values and the gradients lie alike
      T* const g = grads.segment(0, k, len);
      const T* const x = values.segment(0, k, sameLen);
      len = std::min(len, n - k);
      for (std::size_t c = 0; c < count; ++c) w[c] = const_cast<T*>(s.v) + layer.weights(rows - 1 - u - c) + k;
      kernels::axpyManyAndDescend(g, a, w, count, x, step, len);
      if (u == 0) s.reach(static_cast<Index>(g - s.g), len);
      k += len;
    }
  }
  s.reach(layer.firstWeight, rows * n);
  SgdInBackward<T>::local().stepped({layer.firstWeight, static_cast<Index>(rows * n)});
}

// Some token's input is not a run: operand by operand, row by row.
template <class T, class Live, class AffineGrad>
BURTORCH_INLINE void linearListedBackward(Sweep<T>& s, const LinearRecord& layer, const Index* inputLists, std::size_t tokens, Live live, AffineGrad affineGrad) noexcept {
  for (std::size_t t = tokens; t-- > 0;) {
    visitList(s.links, inputLists[t], [&](auto xAt) {
      for (std::size_t j = layer.rows; j-- > 0;) {
        const Index y = layer.output(t, j);
        if (!live(y)) continue;
        const T gy = affineGrad(y);
        productBackward(s, xAt, RangeAt{layer.weights(j)}, layer.n, gy);
        if (layer.hasBias()) s.addToLeafOrNode(layer.firstBias + static_cast<Index>(j), gy);
      }
    });
  }
}

// Node i is the highest reached row of a layer (see Resume); rows above it are not reached, so
// only tokens up to i's take part.
template <class T>
BURTORCH_OUTLINE Resume linearRowBackward(bool* reached, Index low, Index floor, Index i, Index at) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const auto layer = readRecord<LinearRecord>(s.links + at);
  const Index* inputLists = LinearRecord::inputLists(s.links + at);
  const std::size_t tokens = (i - layer.firstOutput) / layer.rows + 1;
  const auto live = [&](Index y) { return y == i || s.reached[y]; };
  // The gradient before the activation; the activation's derivative is written in the output.
  const auto affineGrad = [&](Index y) { return activationGradient(layer.activation, s.v[y], s.g[y]); };
  const auto input = [&](std::size_t t) { return s.links[inputLists[t]] & ~kRangeFlag; };
  bool everyInputARun = true;
  for (std::size_t t = 0; t < tokens; ++t) everyInputARun = everyInputARun && isOneRun(s.links[inputLists[t]]);
  // memchr: a vectorised scan of the flags (a bool is one byte, 0 or 1).
  const bool everyOutput = i == layer.output(tokens - 1, layer.rows - 1) && std::memchr(s.reached + layer.firstOutput, 0, i - layer.firstOutput) == nullptr;
  const bool stepHere = everyOutput && tokens == 1 && SgdInBackward<T>::local().isOpen() && SgdInBackward<T>::local().gradientsAreZero();
  if (stepHere && everyInputInRuns(s.links, inputLists, 1)) linearTokenStepBackward(s, layer, inputLists, SgdInBackward<T>::local().step());
  else if (everyOutput && asOneBlock(tokens, layer.n, layer.rows) && everyInputInRuns(s.links, inputLists, tokens)) linearBlockBackward(s, layer, inputLists, tokens);
  else if (everyInputARun && everyOutput) linearDenseBackward(s, layer, tokens, input, affineGrad);
  else if (everyInputARun) linearRunsBackward(s, layer, tokens, input, live, affineGrad);
  else linearListedBackward(s, layer, inputLists, tokens, live, affineGrad);
  std::fill(s.reached + layer.firstOutput, s.reached + i, false);
  return resumeBelow(s, layer.firstOutput);
}

}  // namespace detail

}  // namespace burtorch

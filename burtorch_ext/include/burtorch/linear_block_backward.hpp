// The backward of a layer's rows as two matrix products (gemm.hpp), where the root reaches
// every output of a block of tokens whose inputs are in runs.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "burtorch/linear_rows.hpp"
#include "burtorch/optim.hpp"
#include "burtorch/sweep.hpp"

namespace burtorch {

namespace detail {

// Where the root reaches every output of a block of tokens whose inputs are in runs: with G the
// gradients before the activation (tokens x rows), dW += G^T X and dX = G W, two matrix products
// (gemm.hpp), and the biases' gradients the columns' sums of G. dX goes through a dense buffer,
// then is added run by run: two tokens' inputs may share nodes (the same embedding row). The
// terms of each gradient come in another order than token by token: within 1e-6 relative in
// FP32. Where the SGD step is taken in the sweep (optim.hpp), dW's product takes it.
// The weights from which a layer's product takes the SGD step in the sweep: the step saves a
// pass over values and gradients that no longer fit in cache, but small matrices (the GPT's
// 24 x 24 to 96 x 24) go through the micro-kernel's buffer element by element, which costs
// more than their share of the vectorised pass (GPT b = 8: 3% slower a step).
inline constexpr std::size_t kSweepStepWeights = std::size_t{1} << 16;
// Or a block of this few tokens, whatever its size: each weight's gradient is then a few products
// (k = tokens), so dW's product is mostly its writes, and stepping there saves the pass after the
// sweep over the whole model. GPT b = 1 (8 tokens) 99.5 -> 93.0 µs a step; with every layer
// stepped in the sweep at every batch, GPT b = 8 and 64 (64 tokens) were within 1%, the MLP at
// b = 64 1.7-2.8% slower (9 alternating rounds of 40 steps on core 1; the same bits).
inline constexpr std::size_t kSweepStepTokens = 8;

// The length of the runs every token's input is made of, where each is runs of one length (the
// MLP's context: a run per embedding row); 0 otherwise.
inline std::size_t commonRunLength(const Index* links, const Index* lists, std::size_t tokens) noexcept {
  if (links[lists[0]] != kRunsMarker) return 0;
  const Index length = links[lists[0] + 1];
  for (std::size_t t = 0; t < tokens; ++t)
    if (links[lists[t]] != kRunsMarker || links[lists[t] + 1] != length) return 0;
  return length;
}

// Rows of a layer from which dX goes over the distinct runs (below): a product per position costs a
// call and the packing of its panels, which a shallow product does not repay. The MLP's steps at
// b = 64 on the AMD EPYC host, over the distinct runs against one product over the tokens:
// e = 4 x1.17, 16 x1.10, 32 x0.98, 64 x0.92, 128 x0.89, 512 x0.86, 1,024 x0.88 as long.
inline constexpr std::size_t kDistinctRunsRows = 32;

// dX = G W where tokens read the same runs at the same position (the MLP's inputs, embedding rows:
// at b = 64, at most 27 rows at each of its 16 positions). The tokens that read one run at
// position c give it one gradient, (the sum of their rows of G) W[:, c L .. (c + 1) L): a product
// over the distinct runs, not over the tokens. The sums come first, in order of token: within
// 1e-6 relative in FP32 of the product token by token. Returns false, having done nothing, where
// the distinct runs are more than half the tokens' (as long a product, and the sums besides).
template <class T>
bool dxOverDistinctRuns(Sweep<T>& s, const LinearRecord& layer, const Index* lists, std::size_t tokens, std::size_t length, const T* gy, T* sums, T* dx) noexcept {
  using kernels::StridedRows;
  const std::size_t rows = layer.rows, n = layer.n, positions = n / length;
  static thread_local std::vector<std::pair<Index, Index>> readers BURTORCH_INITIAL_EXEC;  // (a run's first node, token), by position
  readers.resize(positions * tokens);
  // Sorted by run, a token that reads the run of the token before it adds to that run's sum.
  const auto sharesRun = [](const std::pair<Index, Index>* at, std::size_t t) { return t > 0 && at[t].first == at[t - 1].first; };
  std::size_t distinct = 0;
  for (std::size_t c = 0; c < positions; ++c) {
    std::pair<Index, Index>* const at = readers.data() + c * tokens;
    for (std::size_t t = 0; t < tokens; ++t) at[t] = {s.links[lists[t] + 2 + c], static_cast<Index>(t)};
    std::sort(at, at + tokens);
    for (std::size_t t = 0; t < tokens; ++t) distinct += !sharesRun(at, t);
  }
  if (2 * distinct > positions * tokens) return false;
  const StridedRows<T> sumRows{sums, rows}, out{dx, length};
  for (std::size_t c = 0; c < positions; ++c) {
    const std::pair<Index, Index>* at = readers.data() + c * tokens;
    std::size_t runs = 0;
    for (std::size_t t = 0; t < tokens; ++t) {
      const T* const g = gy + at[t].second * rows;
      if (sharesRun(at, t)) addToEachRow(sums + (runs - 1) * rows, g, 1, rows);
      else std::copy_n(g, rows, sums + runs++ * rows);
    }
    const StridedRows<T> w{const_cast<T*>(s.v) + layer.firstWeight + c * length, n};
    kernels::gemm<T>(runs, length, rows, kernels::AFromRows<StridedRows<T>>{sumRows, runs}, kernels::BFromRows<StridedRows<T>>{w, length}, out, true);
    for (std::size_t t = 0, run = 0; t < tokens; ++t) {
      if (sharesRun(at, t)) continue;
      addToEachRow(s.g + at[t].first, dx + run++ * length, 1, length);
      s.reach(at[t].first, length);
    }
  }
  return true;
}

// dW += G^T X (gy: G, tokens x rows), the SGD step taken in it where it is taken in the sweep, and
// the biases' gradients. After dX, which reads the weights that the step may update.
template <class T, class PackA, class PackB>
BURTORCH_INLINE void weightsBackward(Sweep<T>& s, const LinearRecord& layer, std::size_t tokens, const T* gy, const PackA& gt, const PackB& x) noexcept {
  const std::size_t rows = layer.rows, n = layer.n;
  using Write = kernels::WriteBack<T>;
  SgdInBackward<T>& sgd = SgdInBackward<T>::local();
  const bool step = sgd.isOpen() && (rows * n >= kSweepStepWeights || tokens <= kSweepStepTokens);
  const auto descend = sgd.gradientsAreZero() ? Write::kDescendOnZeros : Write::kDescend;
  const Write write = step ? Write{descend, const_cast<T*>(s.v), s.g, sgd.step()} : Write{Write::kAdd};
  kernels::gemm<T>(kernels::kernelChoice(), rows, n, tokens, gt, x, kernels::StridedRows<T>{s.g + layer.firstWeight, n}, write);
  if (step) sgd.stepped({layer.firstWeight, static_cast<Index>(rows * n)});
  s.reach(layer.firstWeight, rows * n);
  if (layer.hasBias()) {
    addEachRow(s.g + layer.firstBias, gy, tokens, rows);
    s.reach(layer.firstBias, rows);
  }
}

// Inputs that are one matrix X in the pool (from node x0, inputsAsMatrix): G read where it lies, X
// and W too where gemm() reads a small B so, and dX added straight into X's gradients (C += G W:
// the same bits as a buffer added after, k being one block of the product's k). At the GPT's
// shapes (64 x 24 to 64 x 96) packing them cost about as much as the multiply-adds.
template <class T>
BURTORCH_INLINE void linearMatrixBackward(Sweep<T>& s, const LinearRecord& layer, Index x0, std::size_t tokens, const T* gy) noexcept {
  using kernels::StridedRows;
  const std::size_t rows = layer.rows, n = layer.n;
  const StridedRows<T> w{const_cast<T*>(s.v) + layer.firstWeight, n}, x{const_cast<T*>(s.v) + x0, n};
  kernels::gemm<T>(tokens, n, rows, kernels::AInPlace<T>{gy, rows, tokens}, kernels::BFromRows<StridedRows<T>>{w, n}, StridedRows<T>{s.g + x0, n}, false);
  weightsBackward(s, layer, tokens, gy, kernels::AColumnsInPlace<T>{gy, rows, rows}, kernels::BFromRows<StridedRows<T>>{x, n});
  s.reach(x0, tokens * n);
}

template <class T>
BURTORCH_INLINE void linearBlockBackward(Sweep<T>& s, const LinearRecord& layer, const Index* lists, std::size_t tokens) noexcept {
  using kernels::StridedRows;
  const std::size_t rows = layer.rows, n = layer.n;
  static thread_local std::vector<T> scratch BURTORCH_INITIAL_EXEC;  // grows to the largest block, then stays
  if (scratch.size() < tokens * (2 * rows + n)) scratch.resize(tokens * (2 * rows + n));
  T* const gy = scratch.data();
  T* const gx = gy + tokens * rows;
  activationGradients(layer.activation, s.v + layer.firstOutput, s.g + layer.firstOutput, gy, tokens * rows);
  const Index x0 = inputsAsMatrix(s.links, lists, tokens, n);
  if (x0 != kNoIndex && rows <= kernels::kernelChoice().kBytes / sizeof(T)) return linearMatrixBackward(s, layer, x0, tokens, gy);
  const StridedRows<T> g{gy, rows}, dx{gx, n};
  const StridedRows<T> w{const_cast<T*>(s.v) + layer.firstWeight, n};
  const InputRows<T> x{const_cast<T*>(s.v), s.links, lists};
  const std::size_t length = rows >= kDistinctRunsRows ? commonRunLength(s.links, lists, tokens) : 0;
  const bool dxDone = length > 0 && dxOverDistinctRuns(s, layer, lists, tokens, length, gy, gx + tokens * n, gx);
  if (!dxDone) kernels::gemm<T>(tokens, n, rows, kernels::AFromRows<StridedRows<T>>{g, tokens}, kernels::BFromRows<StridedRows<T>>{w, n}, dx, true);
  weightsBackward(s, layer, tokens, gy, kernels::AFromColumns<StridedRows<T>>{g, rows}, kernels::BFromRows<InputRows<T>>{x, n});
  if (dxDone) return;
  // Each token's row of dX into its input's gradients, a contiguous segment at a time.
  const InputRows<T> dInput{s.g, s.links, lists};
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t k = 0; k < n;) {
      std::size_t len;
      T* const g = dInput.segment(t, k, len);
      len = std::min(len, n - k);
      addToEachRow(g, gx + t * n + k, 1, len);
      s.reach(static_cast<Index>(g - s.g), len);
      k += len;
    }
}
}  // namespace detail

}  // namespace burtorch

// The backward of a layer's rows as two matrix products (gemm.hpp), where the root reaches
// every output of a block of tokens whose inputs are in runs.
#pragma once

#include <algorithm>
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

template <class T>
BURTORCH_INLINE void linearBlockBackward(Sweep<T>& s, const LinearRecord& layer, const Index* lists, std::size_t tokens) noexcept {
  using kernels::StridedRows;
  const std::size_t rows = layer.rows, n = layer.n;
  static thread_local std::vector<T> scratch;  // grows to the largest block, then stays
  if (scratch.size() < tokens * (rows + n)) scratch.resize(tokens * (rows + n));
  T* const gy = scratch.data();
  T* const gx = gy + tokens * rows;
  activationGradients(layer.activation, s.v + layer.firstOutput, s.g + layer.firstOutput, gy, tokens * rows);
  const StridedRows<T> g{gy, rows}, dx{gx, n};
  const StridedRows<T> w{const_cast<T*>(s.v) + layer.firstWeight, n}, dw{s.g + layer.firstWeight, n};
  const InputRows<T> x{const_cast<T*>(s.v), s.links, lists};
  kernels::gemm<T>(tokens, n, rows, kernels::AFromRows<StridedRows<T>>{g, tokens}, kernels::BFromRows<StridedRows<T>>{w, n}, dx, true);
  // After dX, which reads the weights that the SGD step may now update.
  using Write = kernels::WriteBack<T>;
  SgdInBackward<T>& sgd = SgdInBackward<T>::local();
  const bool step = sgd.isOpen() && rows * n >= kSweepStepWeights;
  const auto descend = sgd.gradientsAreZero() ? Write::kDescendOnZeros : Write::kDescend;
  const Write write = step ? Write{descend, const_cast<T*>(s.v), s.g, sgd.step()} : Write{Write::kAdd};
  kernels::gemm<T>(kernels::kernelChoice(), rows, n, tokens, kernels::AFromColumns<StridedRows<T>>{g, rows}, kernels::BFromRows<InputRows<T>>{x, n}, dw, write);
  if (step) sgd.stepped({layer.firstWeight, static_cast<Index>(rows * n)});
  s.reach(layer.firstWeight, rows * n);
  if (layer.hasBias()) {
    addEachRow(s.g + layer.firstBias, gy, tokens, rows);
    s.reach(layer.firstBias, rows);
  }
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

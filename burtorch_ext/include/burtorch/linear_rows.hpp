// The fused node behind Linear (linear.hpp): the rows of a layer over a block of tokens
// (Op::LinearRow), their record and their forward, token by token or as one matrix product.
#pragma once

#include <algorithm>
#include <span>
#include <type_traits>

#include "burtorch/activation.hpp"
#include "burtorch/gemm.hpp"
#include "burtorch/inner_product.hpp"
#include "burtorch/scratch.hpp"
#include "burtorch/tanh_block.hpp"

namespace burtorch {

namespace detail {

// What the rows of a layer over a block of tokens share, at link b of each of them; then, in the
// link array, the offset of each token's input list (at link a of that token's rows).
struct LinearRecord {
  Index n;            // inputs per token
  Index rows;         // outputs per token
  Index firstWeight;  // row j's weights: [firstWeight + j n, firstWeight + (j + 1) n)
  Index firstBias;    // row j's bias: firstBias + j; kNoIndex: no biases
  Index firstOutput;  // row j of token t: firstOutput + t rows + j
  Activation activation;

  Index output(std::size_t t, std::size_t j) const noexcept { return firstOutput + static_cast<Index>(t * rows + j); }
  Index weights(std::size_t j) const noexcept { return firstWeight + static_cast<Index>(j * n); }
  bool hasBias() const noexcept { return firstBias != kNoIndex; }
  static auto* inputLists(auto* record) noexcept { return record + kWords<LinearRecord>; }
};

// Tokens from which a layer's rows are computed as one block (gemm.hpp) rather than token by
// token, whatever its shape; from kFewBlockTokens where the layer has kBlockWidth inputs and
// outputs or more. Below, the block's set-up costs more than reading W once saves. Measured best
// of 60 steps on the AMD EPYC host, token by token -> one block: GPT b = 1 (8 tokens, d_model 24)
// 153 -> 115 us; MLP b = 8 at e = 16, 64, 128 and 1,024: 37 -> 36, 229 -> 91, 313 -> 116 us and
// 3.0 -> 0.88 ms, b = 4 at e = 128 and 1,024: 255 -> 115 us, 1.77 -> 0.80 ms; but at e = 4 (a layer
// of 4 outputs, one of 4 inputs) b = 4 and 8 took 11 -> 27 and 17 -> 21 us, and b = 2 gained nothing.
inline constexpr std::size_t kBlockTokens = 16, kFewBlockTokens = 4, kBlockWidth = 16;

inline bool asOneBlock(std::size_t tokens, std::size_t inputs, std::size_t outputs) noexcept {
  return tokens >= kBlockTokens || (tokens >= kFewBlockTokens && inputs >= kBlockWidth && outputs >= kBlockWidth);
}

// Weights from which a layer's block product reads W where it lies (Y^T = W X^T) rather than
// packing W^T's panels each step: the MLP's hidden layer (e x 1,024) at every e, whose b = 64
// steps it made x0.55 (e = 4) to x0.95 (e = 1,024) as long on the Intel host; the GPT's layers
// (at most 96 x 24) measured no faster in place and keep the packed path.
inline constexpr std::size_t kWeightsInPlace = std::size_t{1} << 12;

// Token t's input, a run or equal-length runs (lists.hpp), as row t of a matrix for the GEMM's
// packers: over the pool's values in the forward, over its gradients in the backward.
template <class T>
struct InputRows {
  T* base;
  const Index* links;
  const Index* lists;  // token t's list at links + lists[t]

  BURTORCH_INLINE T* segment(std::size_t t, std::size_t k, std::size_t& len) const noexcept {
    const Index* list = links + lists[t];
    if (list[0] != kRunsMarker) {
      len = static_cast<std::size_t>(-1);
      return base + (list[0] & ~kRangeFlag) + k;
    }
    const std::size_t length = list[1], within = k % length;
    len = length - within;
    return base + list[2 + k / length] + within;
  }
};

// Whether every token's input is a run or runs, so that InputRows reads it.
inline bool everyInputInRuns(const Index* links, const Index* lists, std::size_t tokens) noexcept {
  for (std::size_t t = 0; t < tokens; ++t) {
    const Index word = links[lists[t]];
    if (word != kRunsMarker && !(word & kRangeFlag)) return false;
  }
  return true;
}

// The first node of the tokens' inputs where they are the rows of one matrix in the pool, token t's
// input the run from first + t n (the outputs of a layer or of a layer norm: the GPT's every
// product), so that the products read X where it lies instead of packing it; kNoIndex otherwise.
inline Index inputsAsMatrix(const Index* links, const Index* lists, std::size_t tokens, std::size_t n) noexcept {
  const Index first = links[lists[0]] & ~kRangeFlag;
  for (std::size_t t = 0; t < tokens; ++t)
    if (!isOneRun(links[lists[t]]) || links[lists[t]] != (kRangeFlag | (first + static_cast<Index>(t * n)))) return kNoIndex;
  return first;
}

// y[t cols + j] += row[j] for t < count, j < cols: a layer's biases on a block of its outputs.
template <class T>
BURTORCH_INLINE void addToEachRow(T* BURTORCH_RESTRICT y, const T* BURTORCH_RESTRICT row, std::size_t count, std::size_t cols) noexcept {
  for (std::size_t t = 0; t < count; ++t)
    for (std::size_t j = 0; j < cols; ++j) y[t * cols + j] += row[j];
}

// sums[j] += y[t cols + j] for t < count (in order of t), j < cols: the biases' gradients.
template <class T>
BURTORCH_INLINE void addEachRow(T* BURTORCH_RESTRICT sums, const T* BURTORCH_RESTRICT y, std::size_t count, std::size_t cols) noexcept {
  for (std::size_t t = 0; t < count; ++t)
    for (std::size_t j = 0; j < cols; ++j) sums[j] += y[t * cols + j];
}

// The outputs of a block of tokens in one matrix product: Y = X W^T (gemm.hpp: the weights are
// read once per block of rows, not once per token), then the bias and the activation. Each
// output is one chain of products in order of k, as in dotRows, but without dotRows' lanes: the
// bits differ from the token-by-token path, by well under 1e-6 relative in FP32.
template <class T>
void linearBlock(const LinearRecord& layer, std::size_t tokens, const Index* lists) noexcept {
  Pool<T>& pool = Pool<T>::local();
  T* v = pool.values();
  const std::size_t n = layer.n, rows = layer.rows;
  const InputRows<T> x{v, pool.links(), lists};
  const kernels::StridedRows<T> w{v + layer.firstWeight, n}, y{v + layer.firstOutput, rows};
  if (rows * n >= kWeightsInPlace) {
    // Y^T = W X^T, W read where it lies (gemm.hpp's AInPlace), into a buffer, then Y from it.
    T* const transposed = kernels::scratch<T>(rows * tokens);
    kernels::gemm<T>(rows, tokens, n, kernels::AInPlace<T>{v + layer.firstWeight, n, rows}, kernels::BFromColumns<InputRows<T>>{x, tokens},
                     kernels::StridedRows<T>{transposed, tokens}, true);
    kernels::transpose(transposed, rows, tokens, v + layer.firstOutput);
  } else if (const Index x0 = inputsAsMatrix(pool.links(), lists, tokens, n); x0 != kNoIndex) {
    // X where it lies: the same chains as from its panels, without packing them (the GPT's
    // forward products: their packing took 70% as long as their multiply-adds).
    kernels::gemm<T>(tokens, rows, n, kernels::AInPlace<T>{v + x0, n, tokens}, kernels::BFromColumns<kernels::StridedRows<T>>{w, rows}, y, true);
  } else {
    kernels::gemm<T>(tokens, rows, n, kernels::AFromRows<InputRows<T>>{x, tokens}, kernels::BFromColumns<kernels::StridedRows<T>>{w, rows}, y, true);
  }
  if (layer.hasBias()) addToEachRow(v + layer.firstOutput, v + layer.firstBias, tokens, rows);
  // In FP32, tanh for the whole block at once (tanh_block.hpp).
  if constexpr (std::is_same_v<T, float>)
    if (layer.activation == Activation::Tanh) return kernels::tanhMany(v + layer.firstOutput, tokens * rows);
  activateMany(layer.activation, v + layer.firstOutput, tokens * rows);
}

// One token's outputs: the values exactly as innerProduct(WithBias) computes them, then the
// activation's operator; in FP32, tanh for all the rows at once (tanh_block.hpp, within 1e-6
// relative of the operator's), as linearBlock takes it.
template <class T>
void linearToken(const LinearRecord& layer, Index list, Index y0) noexcept {
  Pool<T>& pool = Pool<T>::local();
  T* v = pool.values();
  const std::size_t n = layer.n, rows = layer.rows;
  const Index w0 = layer.firstWeight;
  const bool tanhLater = std::is_same_v<T, float> && layer.activation == Activation::Tanh;
  const auto row = [&](std::size_t j, T data) {
    if (layer.hasBias()) data += v[layer.firstBias + j];
    v[y0 + j] = tanhLater ? data : activated(layer.activation, data);
  };
  // A few rows at a time over contiguous values: the rows share the loads of x.
  const auto contiguous = [&](const T* x) {
    for (std::size_t j = 0; j < rows; j += kernels::kDotRows) {
      const std::size_t count = std::min(rows - j, kernels::kDotRows);
      T dots[kernels::kDotRows];
      kernels::dotRows(x, v + w0 + j * n, n, count, dots);
      for (std::size_t c = 0; c < count; ++c) row(j + c, dots[c]);
    }
  };
  visitList(pool.links(), list, [&](auto xAt) {
    if constexpr (std::is_same_v<decltype(xAt), RangeAt>) {
      contiguous(v + xAt.first);
    } else if constexpr (std::is_same_v<decltype(xAt), RunsAt>) {
      contiguous(gathered(v, xAt, n));  // as dotOf over runs
    } else {
      for (std::size_t j = 0; j < rows; ++j) row(j, dotOf<T>(v, xAt, RangeAt{w0 + static_cast<Index>(j * n)}, n));
    }
  });
  if constexpr (std::is_same_v<T, float>)
    if (tanhLater) kernels::tanhMany(v + y0, rows);
}

// out[t rows + j] = activation(w_j . x_t (+ b_j)) for each token t, with x_t = inputOf(t): every
// token's input recorded and its outputs made, then the values computed token by token, or as
// one block where there are enough tokens and every input is in runs.
template <class T, class InputOf>
void linearRows(std::size_t tokens, InputOf inputOf, Index w0, Index bias0, Activation activation, std::span<Value<T>> out) noexcept {
  Pool<T>& pool = Pool<T>::local();
  const std::size_t rows = out.size() / tokens;
  LinearRecord layer{0, static_cast<Index>(rows), w0, bias0, 0, activation};
  const Index at = pool.appendLinks(kWords<LinearRecord> + tokens);
  for (std::size_t t = 0; t < tokens; ++t) {
    const RecordedList<T> x = inputOf(t);
    BURTORCH_ASSERT(t == 0 || x.count == layer.n);
    LinearRecord::inputLists(pool.links() + at)[t] = x.offset;  // recording may move the links
    const Index y0 = pool.pushRun(rows, Op::LinearRow, x.offset, at);
    if (t == 0) {
      layer.n = x.count;
      layer.firstOutput = y0;
    }
    BURTORCH_ASSERT(y0 == layer.output(t, 0));
    for (std::size_t j = 0; j < rows; ++j) out[t * rows + j] = Value<T>::fromIndex(y0 + static_cast<Index>(j));
  }
  writeRecord(pool.links() + at, layer);
  const Index* lists = LinearRecord::inputLists(pool.links() + at);
  if (asOneBlock(tokens, layer.n, rows) && everyInputInRuns(pool.links(), lists, tokens)) {
    linearBlock<T>(layer, tokens, lists);
    return;
  }
  for (std::size_t t = 0; t < tokens; ++t) linearToken<T>(layer, lists[t], layer.output(t, 0));
}

}  // namespace detail

}  // namespace burtorch

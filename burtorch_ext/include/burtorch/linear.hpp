// Neuron and Linear layer (paper F.1), and the fused node behind Linear: the rows of a layer over
// a block of tokens (Op::LinearRow), with their record, forward and backward.
//
// A Linear layer's parameters are consecutive nodes laid out as PyTorch lays out nn.Linear: the
// weight matrix [outputs][inputs] row by row, then the biases. So a neuron's weights are one
// node range (one link word, not one per weight), and loading weights from elsewhere is one
// copy per block.
#pragma once

#include <algorithm>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "burtorch/activation.hpp"
#include "burtorch/gemm.hpp"
#include "burtorch/inner_product.hpp"
#include "burtorch/random.hpp"
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
// token: below, packing the panels costs more than it saves. Measured on the mini-GPT (8 tokens
// per sample, d_model 24): b = 1 stays token by token, with the same bits as ever.
inline constexpr std::size_t kBlockTokens = 16;

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
  kernels::gemm<T>(tokens, rows, n, kernels::AFromRows<InputRows<T>>{x, tokens}, kernels::BFromColumns<kernels::StridedRows<T>>{w, rows}, y, true);
  if (layer.hasBias()) addToEachRow(v + layer.firstOutput, v + layer.firstBias, tokens, rows);
  // In FP32, tanh for the whole block at once (tanh_block.hpp).
  if constexpr (std::is_same_v<T, float>)
    if (layer.activation == Activation::Tanh) return kernels::tanhMany(v + layer.firstOutput, tokens * rows);
  activateMany(layer.activation, v + layer.firstOutput, tokens * rows);
}

// One token's outputs: the values exactly as innerProduct(WithBias) and the activation's
// operator compute them.
template <class T>
void linearToken(const LinearRecord& layer, Index list, Index y0) noexcept {
  Pool<T>& pool = Pool<T>::local();
  T* v = pool.values();
  const std::size_t n = layer.n, rows = layer.rows;
  const Index w0 = layer.firstWeight;
  const auto row = [&](std::size_t j, T data) {
    if (layer.hasBias()) data += v[layer.firstBias + j];
    v[y0 + j] = activated(layer.activation, data);
  };
  visitList(pool.links(), list, [&](auto xAt) {
    if constexpr (std::is_same_v<decltype(xAt), RangeAt>) {
      for (std::size_t j = 0; j < rows; j += kernels::kDotRows) {
        const std::size_t count = std::min(rows - j, kernels::kDotRows);
        T dots[kernels::kDotRows];
        kernels::dotRows(v + xAt.first, v + w0 + j * n, n, count, dots);
        for (std::size_t c = 0; c < count; ++c) row(j + c, dots[c]);
      }
    } else {
      for (std::size_t j = 0; j < rows; ++j) row(j, dotOf<T>(v, xAt, RangeAt{w0 + static_cast<Index>(j * n)}, n));
    }
  });
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
  if (tokens >= kBlockTokens && everyInputInRuns(pool.links(), lists, tokens)) {
    linearBlock<T>(layer, tokens, lists);
    return;
  }
  for (std::size_t t = 0; t < tokens; ++t) linearToken<T>(layer, lists[t], layer.output(t, 0));
}

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
  static thread_local std::vector<T> scratch;  // grows to the largest layer, then stays
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

// Where the root reaches every output of a block of tokens whose inputs are in runs: with G the
// gradients before the activation (tokens x rows), dW += G^T X and dX = G W, two matrix products
// (gemm.hpp), and the biases' gradients the columns' sums of G. dX goes through a dense buffer,
// then is added run by run: two tokens' inputs may share nodes (the same embedding row). The
// terms of each gradient come in another order than token by token: within 1e-6 relative in
// FP32.
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
  kernels::gemm<T>(rows, n, tokens, kernels::AFromColumns<StridedRows<T>>{g, rows}, kernels::BFromRows<InputRows<T>>{x, n}, dw, false);
  kernels::gemm<T>(tokens, n, rows, kernels::AFromRows<StridedRows<T>>{g, tokens}, kernels::BFromRows<StridedRows<T>>{w, n}, dx, true);
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
  if (everyOutput && tokens >= kBlockTokens && everyInputInRuns(s.links, inputLists, tokens)) linearBlockBackward(s, layer, inputLists, tokens);
  else if (everyInputARun && everyOutput) linearDenseBackward(s, layer, tokens, input, affineGrad);
  else if (everyInputARun) linearRunsBackward(s, layer, tokens, input, live, affineGrad);
  else linearListedBackward(s, layer, inputLists, tokens, live, affineGrad);
  std::fill(s.reached + layer.firstOutput, s.reached + i, false);
  return resumeBelow(s, layer.firstOutput);
}

}  // namespace detail

template <class T>
struct Neuron {
  NodeRange<T> weights;
  Value<T> bias;  // Value() when the neuron has no bias
  Activation activation = Activation::Identity;

  // A neuron with its own parameters, drawn from uniform(-1, 1).
  static Neuron create(std::size_t inputs, bool withBias, Activation activation, Rng& rng) noexcept {
    Neuron n;
    n.weights = leaves<T>(inputs);
    for (std::size_t k = 0; k < inputs; ++k) n.weights[k].setData(rng.uniform<T>(-1, 1));
    if (withBias) n.bias = Value<T>(rng.uniform<T>(-1, 1));
    n.activation = activation;
    return n;
  }

  bool hasBias() const noexcept { return bias.index() != kNoIndex; }

  template <ValueList L>
  Value<T> operator()(const L& x) const noexcept {
    const Value<T> affine = hasBias() ? innerProductWithBias(x, weights, bias) : innerProduct(x, weights);
    return activate(activation, affine);
  }
};

template <class T>
class Linear {
 public:
  // Parameters drawn from uniform(-1, 1).
  Linear(std::size_t inputs, std::size_t outputs, bool withBias, Activation activation, Rng& rng) noexcept
      : Linear(inputs, outputs, withBias, activation) {
    for (std::size_t k = 0; k < params_.size(); ++k) params_[k].setData(rng.uniform<T>(-1, 1));
  }

  // Parameters zero, to be loaded.
  Linear(std::size_t inputs, std::size_t outputs, bool withBias, Activation activation) noexcept
      : inputs_(inputs), outputs_(outputs), withBias_(withBias), activation_(activation) {
    params_ = leaves<T>(inputs * outputs + (withBias ? outputs : 0));
  }

  std::size_t inputs() const noexcept { return inputs_; }
  std::size_t outputs() const noexcept { return outputs_; }
  bool hasBias() const noexcept { return withBias_; }
  NodeRange<T> parameters() const noexcept { return params_; }
  NodeRange<T> weights() const noexcept { return {params_.first, static_cast<Index>(inputs_ * outputs_)}; }
  NodeRange<T> biases() const noexcept {
    return {static_cast<Index>(params_.first + inputs_ * outputs_), static_cast<Index>(withBias_ ? outputs_ : 0)};
  }

  Neuron<T> neuron(std::size_t j) const noexcept {
    Neuron<T> n;
    n.weights = {static_cast<Index>(params_.first + j * inputs_), static_cast<Index>(inputs_)};
    if (withBias_) n.bias = biases()[j];
    n.activation = activation_;
    return n;
  }

  // Sets the parameters from a row-major [outputs][inputs] weight matrix and the biases.
  bool load(std::span<const T> weight, std::span<const T> bias = {}) noexcept {
    if (weight.size() != inputs_ * outputs_ || bias.size() != biases().size()) return false;
    T* values = Pool<T>::local().values();
    std::memcpy(values + params_.first, weight.data(), weight.size_bytes());
    if (!bias.empty()) std::memcpy(values + biases().first, bias.data(), bias.size_bytes());
    return true;
  }

  // out[j] = activation(w_j . x + b_j), one node each (Op::LinearRow): the outputs are
  // consecutive nodes, which the next layer reads as one contiguous run. x may also hold a block
  // of tokens, row-major (a contiguous container of tokens x inputs handles): then out holds
  // tokens x outputs, each token's outputs one after the other, as PyTorch applies a layer to
  // the last dimension.
  template <ValueList L>
  void forward(const L& x, std::span<Value<T>> out) const noexcept {
    BURTORCH_ASSERT(outputs_ > 0 && !out.empty() && out.size() % outputs_ == 0);
    const std::size_t tokens = out.size() / outputs_;
    const auto inputOf = [&](std::size_t t) {
      if constexpr (ValueRange<L>) {
        const std::span<const Value<T>> all(x);
        BURTORCH_ASSERT(all.size() == tokens * inputs_);
        return record(all.subspan(t * inputs_, inputs_));
      } else {
        BURTORCH_ASSERT(tokens == 1);
        return checked(record(x));
      }
    };
    detail::linearRows(tokens, inputOf, params_.first, withBias_ ? biases().first : kNoIndex, activation_, out);
  }

  // As forward() over a block of tokens whose inputs are not one container: token t's input is
  // inputOf(t), any ValueList (the embedding rows one sample's context looks up).
  template <class InputOf>
  void forwardEach(std::size_t tokens, InputOf inputOf, std::span<Value<T>> out) const noexcept {
    BURTORCH_ASSERT(out.size() == tokens * outputs_);
    detail::linearRows(tokens, [&](std::size_t t) { return checked(record(inputOf(t))); }, params_.first,
                       withBias_ ? biases().first : kNoIndex, activation_, out);
  }

  template <ValueList L>
  std::vector<Value<T>> operator()(const L& x) const {
    std::vector<Value<T>> out(outputs_);
    forward(x, std::span<Value<T>>(out));
    return out;
  }

 private:
  RecordedList<T> checked(RecordedList<T> xs) const noexcept {
    BURTORCH_ASSERT(xs.count == inputs_);
    return xs;
  }

  std::size_t inputs_, outputs_;
  bool withBias_;
  Activation activation_;
  NodeRange<T> params_;
};

}  // namespace burtorch

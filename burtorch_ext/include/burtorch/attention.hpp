// Causal multi-head self-attention over a sequence of token vectors (the mini-GPT's block).
// Heads are views, never copies: a head of a token's query, key or value is a run of that
// token's nodes. Each head of each query is one fused node per output (Op::AttentionRow), with
// its record, forward and backward; the outputs go straight into their slice of the
// concatenated result: scores, softmax and the weighted sum make no nodes of their own.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "burtorch/linear.hpp"

namespace burtorch {

namespace detail {

// What one head's outputs for one query share, at link a of each of them; then, in the link
// array, the first node of each key's head, of each value's head, and the attention weights.
template <class T>
struct AttentionRecord {
  Index keys;         // the query at position t sees the keys of positions 0..t
  Index headSize;
  Index query;        // the first node of the query's head
  Index firstOutput;  // the outputs are consecutive nodes
  T scale;            // of the scores: 1 / sqrt(headSize)

  std::size_t words() const noexcept { return kWords<AttentionRecord> + 2 * keys + keys * kWords<T>; }
  auto* keyHeads(auto* record) const noexcept { return record + kWords<AttentionRecord>; }
  auto* valueHeads(auto* record) const noexcept { return keyHeads(record) + keys; }
  // p_u = softmax_u(scale q . k_u), kWords<T> words each.
  auto* weights(auto* record) const noexcept { return valueHeads(record) + keys; }
  T weight(const Index* record, std::size_t u) const noexcept { return readRecord<T>(weights(record) + u * kWords<T>); }
};

// The mini-GPT's head size (d_model 24, 6 heads): its forward and backward get loops of a
// fixed length.
inline constexpr std::size_t kSmallHead = 4;

// y[j] = sum over u < keys of p[u] * v[firstV[u] + j] for j < hd, each as sum4 adds its terms
// (so with its bits). kHeadSize: as in attentionHeadBackward; where known, all of a head's
// outputs go through the keys together, a vector of them per partial sum.
template <std::size_t kHeadSize, class T>
BURTORCH_INLINE void weightedValues(const T* v, const Index* firstV, const T* p, std::size_t keys, std::size_t hd, T* y) noexcept {
  if constexpr (kHeadSize == 0) {
    const auto key = [](std::size_t u) { return static_cast<Index>(u); };
    for (std::size_t j = 0; j < hd; ++j) y[j] = sum4<T>(keys, key, [&](Index u) { return p[u] * v[firstV[u] + j]; });
  } else {
    T sums[4][kHeadSize] = {};
    std::size_t u = 0;
    for (; u + 4 <= keys; u += 4)
      for (std::size_t l = 0; l < 4; ++l)
        for (std::size_t j = 0; j < kHeadSize; ++j) sums[l][j] += p[u + l] * v[firstV[u + l] + j];
    for (; u < keys; ++u)
      for (std::size_t j = 0; j < kHeadSize; ++j) sums[0][j] += p[u] * v[firstV[u] + j];
    for (std::size_t j = 0; j < kHeadSize; ++j) y[j] = (sums[0][j] + sums[1][j]) + (sums[2][j] + sums[3][j]);
  }
}

// With dp_u = dy . v_u:
//   dv_u += p_u dy,  ds_u = p_u (dp_u - sum_w p_w dp_w),  dq += scale ds_u k_u,  dk_u += scale ds_u q.
// dy, dq and the dp_u are kept in scratch: the stores into the keys' and values' gradients
// would otherwise make the compiler read them again for every term. kHeadSize: the head size
// where the caller knows it at compile time (0: head.headSize), so that each loop over a head
// becomes a few vector instructions.
template <std::size_t kHeadSize, class T, class Dy>
BURTORCH_INLINE void attentionHeadBackward(Sweep<T>& s, const AttentionRecord<T>& head, const Index* record, Dy dy) noexcept {
  const std::size_t keys = head.keys, hd = kHeadSize != 0 ? kHeadSize : head.headSize;
  const Index* firstK = head.keyHeads(record);
  const Index* firstV = head.valueHeads(record);
  static thread_local std::vector<T> scratch;  // grows to the largest head, then stays
  if (scratch.size() < 2 * hd + keys) scratch.resize(2 * hd + keys);
  T* BURTORCH_RESTRICT gy = scratch.data();
  T* BURTORCH_RESTRICT dq = gy + hd;
  T* BURTORCH_RESTRICT dp = dq + hd;
  const Index q = head.query;
  for (std::size_t j = 0; j < hd; ++j) {
    gy[j] = dy(j);
    dq[j] = s.g[q + j];
  }
  T mean = 0;
  for (std::size_t u = 0; u < keys; ++u) {
    const T* vu = s.v + firstV[u];
    T sum = 0;
    for (std::size_t j = 0; j < hd; ++j) sum += gy[j] * vu[j];
    dp[u] = sum;
    mean += head.weight(record, u) * sum;
  }
  const T* BURTORCH_RESTRICT qv = s.v + q;
  for (std::size_t u = 0; u < keys; ++u) {
    const T p = head.weight(record, u), ds = head.scale * p * (dp[u] - mean);
    const Index k = firstK[u], v = firstV[u];
    const T* BURTORCH_RESTRICT kv = s.v + k;
    T* BURTORCH_RESTRICT dk = s.g + k;
    T* BURTORCH_RESTRICT dv = s.g + v;
    for (std::size_t j = 0; j < hd; ++j) {
      dv[j] += p * gy[j];
      dq[j] += ds * kv[j];
      dk[j] += ds * qv[j];
    }
    s.reach(k, hd);
    s.reach(v, hd);
  }
  std::copy_n(dq, hd, s.g + q);
  s.reach(q, hd);
}

// Node i is the highest reached output of one head for one query (see Resume). Where the root
// reaches every output (a transformer's always does), the flags are read once, not per term.
template <class T>
BURTORCH_OUTLINE Resume attentionRowBackward(bool* reached, Index low, Index floor, Index i, Index at) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const Index* record = s.links + at;
  const auto head = readRecord<AttentionRecord<T>>(record);
  const Index y0 = head.firstOutput;
  const std::size_t top = i - y0;
  const T* g = s.g + y0;
  bool everyOutput = top + 1 == head.headSize;
  for (std::size_t j = 0; j < top; ++j) everyOutput = everyOutput && s.reached[y0 + j];
  if (everyOutput && head.headSize == kSmallHead) {
    attentionHeadBackward<kSmallHead>(s, head, record, [g](std::size_t j) { return g[j]; });
  } else if (everyOutput) {
    attentionHeadBackward<0>(s, head, record, [g](std::size_t j) { return g[j]; });
  } else {
    attentionHeadBackward<0>(s, head, record, [&](std::size_t j) { return j == top || (j < top && s.reached[y0 + j]) ? g[j] : T(0); });
  }
  for (std::size_t j = 0; j < top; ++j) s.reached[y0 + j] = false;
  return resumeBelow(s, y0);
}

}  // namespace detail

template <class T>
class CausalSelfAttention {
 public:
  // Every projection with a bias, or none.
  CausalSelfAttention(std::size_t dModel, std::size_t heads, bool withBias, Rng& rng) noexcept
      : CausalSelfAttention(dModel, heads, withBias, withBias, rng) {}

  // Parameters drawn from uniform(-1, 1); GPT-2 style models have no bias on query, key and value.
  CausalSelfAttention(std::size_t dModel, std::size_t heads, bool qkvBias, bool projBias, Rng& rng) noexcept
      : query(dModel, dModel, qkvBias, Activation::Identity, rng),
        key(dModel, dModel, qkvBias, Activation::Identity, rng),
        value(dModel, dModel, qkvBias, Activation::Identity, rng),
        proj(dModel, dModel, projBias, Activation::Identity, rng),
        dModel_(dModel),
        heads_(heads) {
    BURTORCH_ASSERT(heads > 0 && dModel % heads == 0);
  }

  // Parameters zero, to be loaded.
  CausalSelfAttention(std::size_t dModel, std::size_t heads, bool qkvBias, bool projBias) noexcept
      : query(dModel, dModel, qkvBias, Activation::Identity),
        key(dModel, dModel, qkvBias, Activation::Identity),
        value(dModel, dModel, qkvBias, Activation::Identity),
        proj(dModel, dModel, projBias, Activation::Identity),
        dModel_(dModel),
        heads_(heads) {
    BURTORCH_ASSERT(heads > 0 && dModel % heads == 0);
  }

  std::size_t dModel() const noexcept { return dModel_; }
  std::size_t heads() const noexcept { return heads_; }
  // All four projections' parameters, consecutive: query, key, value, proj.
  NodeRange<T> parameters() const noexcept {
    const NodeRange<T> last = proj.parameters();
    return {query.parameters().first, last.first + last.count - query.parameters().first};
  }

  // x and out: one or more sequences of `tokens` tokens, each token dModel handles, row-major;
  // a token attends to the tokens of its own sequence only. The projections take every
  // sequence's tokens at once (a block: linear.hpp). Scratch buffers grow on the first call for
  // a size and are reused after, so steady-state steps do not allocate.
  void forward(std::span<const Value<T>> x, std::size_t tokens, std::span<Value<T>> out) {
    const std::size_t d = dModel_, hd = d / heads_, all = x.size() / d;
    BURTORCH_ASSERT(x.size() == all * d && all % tokens == 0 && out.size() == x.size());
    fit(all);
    query.forward(x, span(q_, 0, all * d));
    key.forward(x, span(k_, 0, all * d));
    value.forward(x, span(v_, 0, all * d));
    for (std::size_t first = 0; first < all; first += tokens)
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t h = 0; h < heads_; ++h) {
          const std::span<Value<T>> out = span(concat_, (first + t) * d + h * hd, hd);
          if (hd == detail::kSmallHead) attendHead<detail::kSmallHead>(first, t, h, out);
          else attendHead<0>(first, t, h, out);
        }
    proj.forward(span(concat_, 0, all * d), out);
  }

  Linear<T> query, key, value, proj;

 private:
  static std::span<Value<T>> span(std::vector<Value<T>>& buffer, std::size_t first, std::size_t count) noexcept {
    return std::span<Value<T>>(buffer).subspan(first, count);
  }

  // Head h of the query at position t of the sequence whose first token is `first`, over its
  // positions 0..t: the softmax of the scaled scores,
  // then the weighted sum of the value heads, one node per output (Op::AttentionRow). The values
  // are those of the scalar graph (inner products, * scale, logSumExp, - lse, exp, then inner
  // products with the value columns), bit for bit. Query, key and value heads are runs of
  // consecutive nodes: each is a head's slice of a Linear layer's outputs.
  template <std::size_t kHeadSize>
  void attendHead(std::size_t first, std::size_t t, std::size_t h, std::span<Value<T>> out) noexcept {
    const std::size_t d = dModel_, hd = kHeadSize != 0 ? kHeadSize : d / heads_, keys = t + 1;
    const std::size_t base = first * d;  // the sequence's first token's handles
    Pool<T>& pool = Pool<T>::local();
    detail::AttentionRecord<T> head{static_cast<Index>(keys), static_cast<Index>(hd), q_[base + t * d + h * hd].index(), 0,
                                    T(1) / std::sqrt(static_cast<T>(hd))};
    const Index at = pool.appendLinks(head.words());
    Index* record = pool.links() + at;  // a push does not move the links
    Index* firstK = head.keyHeads(record);
    Index* firstV = head.valueHeads(record);
    for (std::size_t u = 0; u < keys; ++u) {
      firstK[u] = k_[base + u * d + h * hd].index();
      firstV[u] = v_[base + u * d + h * hd].index();
    }
    const T* v = pool.values();
    T peak = -std::numeric_limits<T>::infinity();
    for (std::size_t u = 0; u < keys; ++u) {
      weights_[u] = kernels::dot(v + head.query, v + firstK[u], hd) * head.scale;
      peak = std::max(peak, weights_[u]);
    }
    const auto key = [](std::size_t u) { return static_cast<Index>(u); };
    const T lse = std::isinf(peak) ? peak : peak + std::log(detail::sum4<T>(keys, key, [&](Index u) { return std::exp(weights_[u] - peak); }));
    for (std::size_t u = 0; u < keys; ++u) {
      weights_[u] = std::exp(weights_[u] - lse);
      detail::writeRecord(head.weights(record) + u * detail::kWords<T>, weights_[u]);
    }
    detail::weightedValues<kHeadSize>(v, firstV, weights_.data(), keys, hd, outputs_.data());
    head.firstOutput = pool.pushRun(hd, Op::AttentionRow, at, 0);
    std::copy_n(outputs_.data(), hd, pool.values() + head.firstOutput);
    for (std::size_t j = 0; j < hd; ++j) out[j] = Value<T>::fromIndex(head.firstOutput + static_cast<Index>(j));
    detail::writeRecord(record, head);
  }

  void fit(std::size_t tokens) {
    const std::size_t n = tokens * dModel_;
    if (q_.size() >= n) return;
    q_.resize(n);
    k_.resize(n);
    v_.resize(n);
    concat_.resize(n);
    weights_.resize(tokens);
    outputs_.resize(dModel_ / heads_);
  }

  std::size_t dModel_, heads_;
  std::vector<Value<T>> q_, k_, v_, concat_;
  std::vector<T> weights_;  // one head's scores, then its attention weights
  std::vector<T> outputs_;  // one head's outputs' values
};

}  // namespace burtorch

// Causal multi-head self-attention over a sequence of token vectors (the mini-GPT's block).
// Heads are views, never copies: a head of a token's query, key or value is a run of that
// token's nodes. Each head of each query is one n-ary operator (Op::AttentionRow) whose outputs
// go straight into their slice of the concatenated result: scores, softmax and the weighted sum
// make no nodes of their own.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "burtorch/linear.hpp"

namespace burtorch {

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

  // x and out: tokens x dModel handles, row-major. Scratch buffers grow on the first call for
  // a sequence length and are reused after, so steady-state steps do not allocate.
  void forward(std::span<const Value<T>> x, std::size_t tokens, std::span<Value<T>> out) {
    BURTORCH_ASSERT(x.size() == tokens * dModel_ && out.size() == tokens * dModel_);
    const std::size_t d = dModel_, hd = d / heads_;
    fit(tokens);
    query.forward(x, span(q_, 0, tokens * d));
    key.forward(x, span(k_, 0, tokens * d));
    value.forward(x, span(v_, 0, tokens * d));
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t h = 0; h < heads_; ++h) attendHead(t, h, span(concat_, t * d + h * hd, hd));
    proj.forward(span(concat_, 0, tokens * d), out);
  }

  Linear<T> query, key, value, proj;

 private:
  static std::span<Value<T>> span(std::vector<Value<T>>& buffer, std::size_t first, std::size_t count) noexcept {
    return std::span<Value<T>>(buffer).subspan(first, count);
  }

  // Head h of the query at position t, over positions 0..t: the softmax of the scaled scores,
  // then the weighted sum of the value heads, one node per output (Op::AttentionRow). The values
  // are those of the scalar graph (inner products, * scale, logSumExp, - lse, exp, then inner
  // products with the value columns), bit for bit. Query, key and value heads are runs of
  // consecutive nodes: each is a head's slice of a Linear layer's outputs.
  void attendHead(std::size_t t, std::size_t h, std::span<Value<T>> out) noexcept {
    const std::size_t d = dModel_, hd = d / heads_, keys = t + 1;
    Pool<T>& pool = Pool<T>::local();
    const Index tail = pool.appendLinks(detail::kAttentionHeader + (2 + detail::kConstWords) * keys);
    Index* links = pool.links();
    Index* firstK = links + tail + detail::kAttentionHeader;
    Index* firstV = firstK + keys;
    const Index q = q_[t * d + h * hd].index();
    for (std::size_t u = 0; u < keys; ++u) {
      firstK[u] = k_[u * d + h * hd].index();
      firstV[u] = v_[u * d + h * hd].index();
    }
    const T scale = T(1) / std::sqrt(static_cast<T>(hd));
    const T* v = pool.values();
    T peak = -std::numeric_limits<T>::infinity();
    for (std::size_t u = 0; u < keys; ++u) {
      weights_[u] = kernels::dot(v + q, v + firstK[u], hd) * scale;
      peak = std::max(peak, weights_[u]);
    }
    const auto at = [](std::size_t u) { return static_cast<Index>(u); };
    const T lse = std::isinf(peak) ? peak : peak + std::log(detail::sum4<T>(keys, at, [&](Index u) { return std::exp(weights_[u] - peak); }));
    Index* kept = firstV + keys;
    for (std::size_t u = 0; u < keys; ++u) {
      weights_[u] = std::exp(weights_[u] - lse);
      std::memcpy(kept + u * detail::kConstWords, &weights_[u], sizeof(T));
    }
    links[tail] = static_cast<Index>(keys);
    links[tail + 1] = static_cast<Index>(hd);
    links[tail + 2] = q;
    std::memcpy(links + tail + 4, &scale, sizeof(T));
    for (std::size_t j = 0; j < hd; ++j) {
      const T* values = pool.values();  // a push may move the values
      const T y = detail::sum4<T>(keys, at, [&](Index u) { return weights_[u] * values[firstV[u] + j]; });
      out[j] = detail::node(y, Op::AttentionRow, tail);
    }
    links[tail + 3] = out[0].index();
  }

  void fit(std::size_t tokens) {
    const std::size_t n = tokens * dModel_;
    if (q_.size() >= n) return;
    q_.resize(n);
    k_.resize(n);
    v_.resize(n);
    concat_.resize(n);
    weights_.resize(tokens);
  }

  std::size_t dModel_, heads_;
  std::vector<Value<T>> q_, k_, v_, concat_;
  std::vector<T> weights_;  // one head's scores, then its attention weights
};

}  // namespace burtorch

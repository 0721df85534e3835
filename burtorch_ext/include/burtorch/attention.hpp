// Causal multi-head self-attention over a sequence of token vectors (the mini-GPT's block).
// Heads are views, never copies: a head of a token's query or key is a sub-span of that token's
// handles, a head's value column across tokens is a strided view, and each head writes its
// outputs straight into its slice of the concatenated result. Each key head and value column
// is recorded in the link array once per forward and shared by every query that reads it.
#pragma once

#include <cmath>
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
    for (std::size_t t = 0; t < tokens; ++t) {
      const auto xs = record(x.subspan(t * d, d));
      query.forward(xs, span(q_, t * d, d));
      key.forward(xs, span(k_, t * d, d));
      value.forward(xs, span(v_, t * d, d));
    }
    // Key heads per (token, head) and value columns per (head, dim) over all tokens; a query
    // at position t reads the first t+1 entries of a column.
    for (std::size_t u = 0; u < tokens; ++u)
      for (std::size_t h = 0; h < heads_; ++h) keyHeads_[u * heads_ + h] = record(span(k_, u * d + h * hd, hd));
    for (std::size_t c = 0; c < d; ++c) valueColumns_[c] = record(StridedValues<T>{v_.data() + c, tokens, static_cast<std::ptrdiff_t>(d)});

    const T scale = T(1) / std::sqrt(static_cast<T>(hd));
    for (std::size_t t = 0; t < tokens; ++t) {
      // Each stage over the visible positions makes consecutive nodes, so a head's attention
      // weights are one run; then the heads' outputs follow one another, one run per token.
      for (std::size_t h = 0; h < heads_; ++h) {
        const auto qh = record(span(q_, t * d + h * hd, hd));
        const auto scores = std::span<Value<T>>(scores_.data(), t + 1);
        for (std::size_t u = 0; u <= t; ++u) scores[u] = innerProduct(qh, keyHeads_[u * heads_ + h]);
        for (Value<T>& s : scores) s = mulByConstant(s, scale);
        const Value<T> lse = logSumExp(std::span<const Value<T>>(scores));
        for (Value<T>& s : scores) s = s - lse;
        for (Value<T>& s : scores) s = exp(s);
        weights_[h] = record(std::span<const Value<T>>(scores));
      }
      for (std::size_t h = 0; h < heads_; ++h) {
        for (std::size_t j = 0; j < hd; ++j) {
          const RecordedList<T> column = valueColumns_[h * hd + j];
          concat_[t * d + h * hd + j] = innerProduct(weights_[h], RecordedList<T>{column.offset, static_cast<Index>(t + 1)});
        }
      }
    }
    for (std::size_t t = 0; t < tokens; ++t) proj.forward(span(concat_, t * d, d), out.subspan(t * d, d));
  }

  Linear<T> query, key, value, proj;

 private:
  static std::span<Value<T>> span(std::vector<Value<T>>& buffer, std::size_t first, std::size_t count) noexcept {
    return std::span<Value<T>>(buffer).subspan(first, count);
  }

  void fit(std::size_t tokens) {
    const std::size_t n = tokens * dModel_;
    if (q_.size() >= n) return;
    q_.resize(n);
    k_.resize(n);
    v_.resize(n);
    concat_.resize(n);
    scores_.resize(tokens);
    keyHeads_.resize(tokens * heads_);
    valueColumns_.resize(dModel_);
    weights_.resize(heads_);
  }

  std::size_t dModel_, heads_;
  std::vector<Value<T>> q_, k_, v_, concat_, scores_;
  std::vector<RecordedList<T>> keyHeads_, valueColumns_, weights_;
};

}  // namespace burtorch

// Causal multi-head self-attention over sequences of token vectors (the mini-GPT's block).
// Heads are views, never copies: a head of a token's query, key or value is a run of that
// token's nodes. The attention of a whole block of sequences is one fused n-ary node per output
// (Op::AttentionRow), laid out as the heads' concatenation, with one record: scores, causal
// mask, softmax and the weighted sum make no nodes of their own, and forward and backward run
// per sequence and head over small contiguous arrays (block 8 and head 4 in the mini-GPT: a
// head's 8 x 8 weights and 8 x 4 query, key and value fit in registers).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "burtorch/attention_small.hpp"
#include "burtorch/linear.hpp"
#include "burtorch/tanh_block.hpp"

namespace burtorch {

namespace detail {

// What the outputs of one attention block share, at link a of each of them; then, in the link
// array, the attention weights of every sequence and head: tokens x tokens each, row t the
// softmax over keys 0..t and zeros after (the causal mask), sizeof(T) bytes each.
template <class T>
struct AttentionRecord {
  Index sequences, tokens, heads, headSize;
  Index query, key, value;  // each projection's outputs: token after token, stride nodes apart
  Index stride;             // d, or 3 d where one product made all three (each token's q, k, v in a row)
  Index firstOutput;        // the outputs are consecutive nodes, token after token
  T scale;                  // of the scores: 1 / sqrt(headSize)

  std::size_t dModel() const noexcept { return std::size_t{heads} * headSize; }
  std::size_t weightsPerHead() const noexcept { return std::size_t{tokens} * tokens; }
  std::size_t weightBytes() const noexcept { return std::size_t{sequences} * heads * weightsPerHead() * sizeof(T); }
  std::size_t words() const noexcept { return kWords<AttentionRecord> + (weightBytes() + sizeof(Index) - 1) / sizeof(Index); }
  static std::byte* weights(Index* record) noexcept { return reinterpret_cast<std::byte*>(record + kWords<AttentionRecord>); }
  static const std::byte* weights(const Index* record) noexcept {
    return reinterpret_cast<const std::byte*>(record + kWords<AttentionRecord>);
  }
  // Where head h of the sequence's token t starts, counted from the outputs' first node, and from a projection's.
  std::size_t at(std::size_t sequence, std::size_t t, std::size_t h) const noexcept { return (sequence * tokens + t) * dModel() + h * headSize; }
  std::size_t in(std::size_t sequence, std::size_t t, std::size_t h) const noexcept { return (sequence * tokens + t) * stride + h * headSize; }
};

// The mini-GPT's block and head size (block 8, d_model 24, 6 heads): its loops get fixed
// lengths, each row of 8 scores one vector.
inline constexpr std::size_t kSmallBlock = 8, kSmallHead = 4;

// One sequence's head as small arrays: row-major (n x hd) where a loop broadcasts an element,
// transposed (hd x n) where it runs over the tokens, so that every inner loop runs over n
// contiguous values. kN, kHd: the sizes where known at compile time (0: n, hd at run time).
template <std::size_t kN, std::size_t kHd, class T>
struct Head {
  std::size_t n, hd;
  T scale;
  std::size_t tokens() const noexcept { return kN != 0 ? kN : n; }
  std::size_t size() const noexcept { return kHd != 0 ? kHd : hd; }
};

// Copies head h of one sequence's tokens out of the pool's values (first: where the sequence's
// first token's head starts in a projection, d apart from token to token): rows n x hd, or
// transposed into hd x n.
template <bool kTransposed, std::size_t kN, std::size_t kHd, class T>
BURTORCH_INLINE void gather(const Head<kN, kHd, T>& h, const T* BURTORCH_RESTRICT from, std::size_t d, T* BURTORCH_RESTRICT to) noexcept {
  const std::size_t n = h.tokens(), hd = h.size();
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < hd; ++j) (kTransposed ? to[j * n + t] : to[t * hd + j]) = from[t * d + j];
}

// p (n x n) = the causal softmax of scale q k^T, zeros above the diagonal; yt (hd x n) = (p v)^T.
// q and v are n x hd, kt hd x n; pt is scratch (n x n).
template <std::size_t kN, std::size_t kHd, class T>
BURTORCH_INLINE void attendOneHead(const Head<kN, kHd, T>& h, const T* BURTORCH_RESTRICT q, const T* BURTORCH_RESTRICT kt,
                                   const T* BURTORCH_RESTRICT v, T* BURTORCH_RESTRICT p, T* BURTORCH_RESTRICT pt,
                                   T* BURTORCH_RESTRICT yt) noexcept {
  const std::size_t n = h.tokens(), hd = h.size();
  for (std::size_t t = 0; t < n; ++t) {
    T* BURTORCH_RESTRICT row = p + t * n;
    for (std::size_t u = 0; u < n; ++u) row[u] = T(0);
    for (std::size_t j = 0; j < hd; ++j)
      for (std::size_t u = 0; u < n; ++u) row[u] += q[t * hd + j] * kt[j * n + u];
    T peak = row[0] * h.scale;
    for (std::size_t u = 0; u <= t; ++u) peak = std::max(peak, row[u] * h.scale);
    for (std::size_t u = 0; u < n; ++u) row[u] = row[u] * h.scale - peak;
    kernels::expMany(row, n);  // FP32: eight lanes at a time (tanh_block.hpp)
    T sum = 0;
    for (std::size_t u = 0; u < n; ++u) {
      row[u] = u <= t ? row[u] : T(0);  // the causal mask
      sum += row[u];
    }
    const T inverse = T(1) / sum;
    for (std::size_t u = 0; u < n; ++u) row[u] *= inverse;
  }
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t u = 0; u < n; ++u) pt[u * n + t] = p[t * n + u];
  for (std::size_t j = 0; j < hd * n; ++j) yt[j] = T(0);
  for (std::size_t u = 0; u < n; ++u)
    for (std::size_t j = 0; j < hd; ++j)
      for (std::size_t t = 0; t < n; ++t) yt[j * n + t] += v[u * hd + j] * pt[u * n + t];
}

// What one head's backward reads and writes: q, k, dy (n x hd), vt (hd x n), the weights p
// (n x n); then scratch; then the gradients dqt, dkt, dvt (hd x n), which it sets.
template <class T>
struct HeadBackward {
  T *q, *k, *dy, *vt, *p, *dp, *ds, *dst, *dqt, *dkt, *dvt;

  static std::size_t size(std::size_t n, std::size_t hd) noexcept { return 7 * n * hd + 4 * n * n; }
  HeadBackward(T* s, std::size_t n, std::size_t hd) noexcept
      : q(s), k(q + n * hd), dy(k + n * hd), vt(dy + n * hd), p(vt + n * hd), dp(p + n * n), ds(dp + n * n), dst(ds + n * n),
        dqt(dst + n * n), dkt(dqt + n * hd), dvt(dkt + n * hd) {}
};

// With y = p v, p = softmax(s) row by row, s = scale q k^T, and dp = dy v^T:
//   dv = p^T dy,  ds = p (dp - rowsum(p dp)),  dq = scale ds k,  dk = scale ds^T q,
// each transposed (hd x n).
template <std::size_t kN, std::size_t kHd, class T>
BURTORCH_INLINE void attentionHeadBackward(const Head<kN, kHd, T>& h, const HeadBackward<T>& b) noexcept {
  const std::size_t n = h.tokens(), hd = h.size();
  T* BURTORCH_RESTRICT dvt = b.dvt;
  T* BURTORCH_RESTRICT dkt = b.dkt;
  T* BURTORCH_RESTRICT dqt = b.dqt;
  T* BURTORCH_RESTRICT dp = b.dp;
  T* BURTORCH_RESTRICT ds = b.ds;
  T* BURTORCH_RESTRICT dst = b.dst;
  const T* BURTORCH_RESTRICT p = b.p;
  for (std::size_t j = 0; j < 3 * hd * n; ++j) dqt[j] = T(0);  // dqt, dkt and dvt
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t u = 0; u < n; ++u) dp[t * n + u] = T(0);
    for (std::size_t j = 0; j < hd; ++j) {
      const T dy = b.dy[t * hd + j];
      for (std::size_t u = 0; u < n; ++u) {
        dvt[j * n + u] += dy * p[t * n + u];
        dp[t * n + u] += dy * b.vt[j * n + u];
      }
    }
    T mean = 0;
    for (std::size_t u = 0; u < n; ++u) mean += p[t * n + u] * dp[t * n + u];
    for (std::size_t u = 0; u < n; ++u) ds[t * n + u] = h.scale * p[t * n + u] * (dp[t * n + u] - mean);
    for (std::size_t j = 0; j < hd; ++j)
      for (std::size_t u = 0; u < n; ++u) dkt[j * n + u] += b.q[t * hd + j] * ds[t * n + u];
  }
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t u = 0; u < n; ++u) dst[u * n + t] = ds[t * n + u];
  for (std::size_t u = 0; u < n; ++u)
    for (std::size_t j = 0; j < hd; ++j)
      for (std::size_t t = 0; t < n; ++t) dqt[j * n + t] += b.k[u * hd + j] * dst[u * n + t];
}

template <std::size_t kN, std::size_t kHd, class T>
BURTORCH_INLINE void attentionBlockBackward(Sweep<T>& s, const AttentionRecord<T>& a, const std::byte* weights, std::size_t top) noexcept {
  const Head<kN, kHd, T> head{a.tokens, a.headSize, a.scale};
  const std::size_t n = head.tokens(), hd = head.size(), d = a.dModel();
  static thread_local std::vector<T> scratch BURTORCH_INITIAL_EXEC;  // grows to the largest head, then stays
  if (scratch.size() < HeadBackward<T>::size(n, hd)) scratch.resize(HeadBackward<T>::size(n, hd));
  const HeadBackward<T> b(scratch.data(), n, hd);
  const Index y0 = a.firstOutput;
  const bool dense = top + 1 == a.sequences * n * d && std::memchr(s.reached + y0, 0, top) == nullptr;
  const std::size_t ld = a.stride;
  for (std::size_t sequence = 0; sequence < a.sequences; ++sequence)
    for (std::size_t h = 0; h < a.heads; ++h) {
      const std::size_t from = a.at(sequence, 0, h), in = a.in(sequence, 0, h);
      if constexpr (kSmallHeadKernels && std::is_same_v<T, float> && kN == kSmallBlock && kHd == kSmallHead) {
        if (dense) {
          std::memcpy(b.p, weights + (sequence * a.heads + h) * n * n * sizeof(T), n * n * sizeof(T));
          attentionSmallHeadBackward(s.v + a.query + in, s.v + a.key + in, s.v + a.value + in, s.g + y0 + from, b.p, ld, d, a.scale,
                                     s.g + a.query + in, s.g + a.key + in, s.g + a.value + in);
          continue;
        }
      }
      gather<false>(head, s.v + a.query + in, ld, b.q);
      gather<false>(head, s.v + a.key + in, ld, b.k);
      gather<true>(head, s.v + a.value + in, ld, b.vt);
      gather<false>(head, s.g + y0 + from, d, b.dy);
      if (!dense)  // outputs the root does not reach contribute nothing
        for (std::size_t t = 0; t < n; ++t)
          for (std::size_t j = 0; j < hd; ++j) {
            const std::size_t k = from + t * d + j;
            if (!(k == top || (k < top && s.reached[y0 + k]))) b.dy[t * hd + j] = T(0);
          }
      std::memcpy(b.p, weights + (sequence * a.heads + h) * n * n * sizeof(T), n * n * sizeof(T));
      attentionHeadBackward(head, b);
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t j = 0; j < hd; ++j) {
          const std::size_t k = in + t * ld + j;
          s.g[a.query + k] += b.dqt[j * n + t];
          s.g[a.key + k] += b.dkt[j * n + t];
          s.g[a.value + k] += b.dvt[j * n + t];
        }
    }
  const std::size_t all = a.sequences * n * ld;  // one projection's nodes, or the three's together
  s.reach(a.query, all);
  if (ld != d) return;
  s.reach(a.key, all);
  s.reach(a.value, all);
}

// Node i is the highest reached output of an attention block (see Resume); outputs the root
// does not reach contribute nothing.
template <class T>
BURTORCH_OUTLINE Resume attentionRowBackward(bool* reached, Index low, Index floor, Index i, Index at) noexcept {
  Sweep<T> s = Sweep<T>::resume(reached, low, floor);
  const Index* record = s.links + at;
  const auto a = readRecord<AttentionRecord<T>>(record);
  const Index y0 = a.firstOutput;
  const std::size_t top = i - y0;
  if (a.tokens == kSmallBlock && a.headSize == kSmallHead) attentionBlockBackward<kSmallBlock, kSmallHead>(s, a, AttentionRecord<T>::weights(record), top);
  else attentionBlockBackward<0, 0>(s, a, AttentionRecord<T>::weights(record), top);
  std::fill(s.reached + y0, s.reached + i, false);
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
        qkv_(query.weights(), 3 * dModel, dModel),
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
        qkv_(query.weights(), 3 * dModel, dModel),
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
  // sequence's tokens at once (a block: linear.hpp), in one product where query, key and value
  // have no bias (their weights are then one 3 dModel x dModel matrix in the pool), then the
  // attention of all of them is one fused block of nodes (Op::AttentionRow), proj's input.
  // Scratch buffers grow on the first call for a size and are reused after, so steady-state
  // steps do not allocate.
  void forward(std::span<const Value<T>> x, std::size_t tokens, std::span<Value<T>> out) {
    const std::size_t d = dModel_, hd = d / heads_, all = x.size() / d;
    BURTORCH_ASSERT(x.size() == all * d && all % tokens == 0 && out.size() == x.size());
    fit(all, tokens);
    Index q0, k0, v0, stride = static_cast<Index>(d);
    if (query.hasBias()) {
      query.forward(x, span(q_, 0, all * d));
      key.forward(x, span(k_, 0, all * d));
      value.forward(x, span(v_, 0, all * d));
      q0 = firstOfRun(q_, all * d), k0 = firstOfRun(k_, all * d), v0 = firstOfRun(v_, all * d);
    } else {
      BURTORCH_ASSERT(key.weights().first == query.weights().first + d * d && value.weights().first == key.weights().first + d * d);
      qkv_.forward(x, span(q_, 0, 3 * all * d));
      stride = static_cast<Index>(3 * d);
      q0 = firstOfRun(q_, 3 * all * d), k0 = q0 + static_cast<Index>(d), v0 = k0 + static_cast<Index>(d);
    }
    Pool<T>& pool = Pool<T>::local();
    detail::AttentionRecord<T> a{static_cast<Index>(all / tokens), static_cast<Index>(tokens), static_cast<Index>(heads_),
                                 static_cast<Index>(hd), q0, k0, v0, stride, 0, T(1) / std::sqrt(static_cast<T>(hd))};
    const Index at = pool.appendLinks(a.words());
    a.firstOutput = pool.pushRun(all * d, Op::AttentionRow, at, 0);
    Index* record = pool.links() + at;  // a push does not move the links
    detail::writeRecord(record, a);
    if (tokens == detail::kSmallBlock && hd == detail::kSmallHead) attendAll<detail::kSmallBlock, detail::kSmallHead>(a, detail::AttentionRecord<T>::weights(record));
    else attendAll<0, 0>(a, detail::AttentionRecord<T>::weights(record));
    for (std::size_t k = 0; k < all * d; ++k) concat_[k] = Value<T>::fromIndex(a.firstOutput + static_cast<Index>(k));
    proj.forward(span(concat_, 0, all * d), out);
  }

  Linear<T> query, key, value, proj;

 private:
  Linear<T> qkv_;  // query's, key's and value's weights as one layer of 3 dModel outputs (used where they have no bias)

  static std::span<Value<T>> span(std::vector<Value<T>>& buffer, std::size_t first, std::size_t count) noexcept {
    return std::span<Value<T>>(buffer).subspan(first, count);
  }

  // A layer's outputs are consecutive nodes (linear.hpp), which the fused block reads as arrays.
  static Index firstOfRun(const std::vector<Value<T>>& handles, std::size_t n) noexcept {
    if (!consecutive(std::span<const Value<T>>(handles).first(n))) detail::fail("burtorch: attention's projections are not consecutive nodes");
    return handles[0].index();
  }

  // Every sequence's every head: its weights into the record, its outputs into their nodes.
  template <std::size_t kN, std::size_t kHd>
  void attendAll(const detail::AttentionRecord<T>& a, std::byte* weights) noexcept {
    const detail::Head<kN, kHd, T> head{a.tokens, a.headSize, a.scale};
    const std::size_t n = head.tokens(), hd = head.size(), d = a.dModel(), ld = a.stride;
    T* q = scratch_.data();
    T* kt = q + n * hd;
    T* v = kt + n * hd;
    T* yt = v + n * hd;
    T* p = yt + n * hd;
    T* pt = p + n * n;
    T* values = Pool<T>::local().values();
    for (std::size_t sequence = 0; sequence < a.sequences; ++sequence)
      for (std::size_t h = 0; h < a.heads; ++h) {
        const std::size_t from = a.at(sequence, 0, h), in = a.in(sequence, 0, h);
        if constexpr (detail::kSmallHeadKernels && std::is_same_v<T, float> && kN == detail::kSmallBlock && kHd == detail::kSmallHead) {
          detail::attendSmallHead(values + a.query + in, values + a.key + in, values + a.value + in, ld, d, a.scale, p,
                                  values + a.firstOutput + from);
        } else {
          detail::gather<false>(head, values + a.query + in, ld, q);
          detail::gather<true>(head, values + a.key + in, ld, kt);
          detail::gather<false>(head, values + a.value + in, ld, v);
          detail::attendOneHead(head, q, kt, v, p, pt, yt);
          for (std::size_t t = 0; t < n; ++t)
            for (std::size_t j = 0; j < hd; ++j) values[a.firstOutput + from + t * d + j] = yt[j * n + t];
        }
        std::memcpy(weights + (sequence * a.heads + h) * n * n * sizeof(T), p, n * n * sizeof(T));
      }
  }

  void fit(std::size_t all, std::size_t tokens) {
    const std::size_t n = all * dModel_, hd = dModel_ / heads_;
    if (scratch_.size() < 4 * tokens * hd + 2 * tokens * tokens) scratch_.resize(4 * tokens * hd + 2 * tokens * tokens);
    if (q_.size() >= 3 * n) return;
    q_.resize(3 * n);  // query, key and value, where one product makes them
    k_.resize(n);
    v_.resize(n);
    concat_.resize(n);
  }

  std::size_t dModel_, heads_;
  std::vector<Value<T>> q_, k_, v_, concat_;
  std::vector<T> scratch_;  // one head of one sequence: q, k, v, outputs, weights and their transpose
};

}  // namespace burtorch

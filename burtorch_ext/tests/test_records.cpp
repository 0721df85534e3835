// Records: what a fused node's forward writes into the link array, its backward and the DOT
// export read back through the same type.
#include <cmath>
#include <cstring>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"

using namespace burtorch;
using namespace burtorch::detail;

namespace {

template <class T>
bool sameBits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
NodeRange<T> sines(std::size_t n, double phase) {
  const NodeRange<T> x = leaves<T>(n);
  for (std::size_t k = 0; k < n; ++k) x[k].setData(static_cast<T>(std::sin(phase + 1.7 * static_cast<double>(k))));
  return x;
}

// Every node with this op, in creation order.
template <class T>
std::vector<Index> nodesOf(Op op) {
  const Pool<T>& pool = Pool<T>::local();
  std::vector<Index> out;
  for (Index i = 0; i < pool.size(); ++i)
    if (pool.ops()[i] == op) out.push_back(i);
  return out;
}

template <class T>
void layerNormRecordHoldsItsOutputs() {
  auto& pool = Pool<T>::local();
  pool.rewind(Mark{});
  const LayerNorm<T> norm(7);
  const NodeRange<T> x = sines<T>(7, 0.3);
  std::vector<Value<T>> y(7);
  norm.forward(x, std::span<Value<T>>(y));
  const Args args = pool.args()[y[3].index()];
  CHECK(args.b == 1);  // after x's list: an odd word, where a double is not 8-byte aligned
  const auto r = readRecord<LayerNormRecord<T>>(pool.links() + args.b);
  CHECK(r.n == 7 && r.rows == 1 && r.firstGain == norm.gamma().first && r.firstBias == norm.beta().first && r.firstOutput == y[0].index());
  const auto [mean, scale] = LayerNormRecord<T>::stats(pool.links() + args.b, 0);
  for (std::size_t k = 0; k < 7; ++k) {
    const T xhat = (x[k].data() - mean) * scale;
    CHECK(sameBits(xhat * norm.gamma()[k].data() + norm.beta()[k].data(), y[k].data()));
  }
  pool.rewind(Mark{});
}

// Rows in one run of nodes: one record for the block, each row's outputs as forward() makes them.
template <class T>
void layerNormBlockHoldsItsRows() {
  auto& pool = Pool<T>::local();
  pool.rewind(Mark{});
  const LayerNorm<T> norm(5);
  const NodeRange<T> x = sines<T>(3 * 5, 0.7);
  std::vector<Value<T>> xs(15), rows(15), one(5);
  for (std::size_t k = 0; k < 15; ++k) xs[k] = x[k];
  norm.forwardRows(xs, std::span<Value<T>>(rows));
  const Index* record = pool.links() + pool.args()[rows[14].index()].b;
  const auto r = readRecord<LayerNormRecord<T>>(record);
  CHECK(r.n == 5 && r.rows == 3 && r.firstOutput == rows[0].index() && rows[14].index() == rows[0].index() + 14);
  for (std::size_t row = 0; row < 3; ++row) {
    norm.forward(std::span<const Value<T>>(xs).subspan(row * 5, 5), std::span<Value<T>>(one));
    for (std::size_t k = 0; k < 5; ++k) CHECK(sameBits(one[k].data(), rows[row * 5 + k].data()));
  }
  pool.rewind(Mark{});
}

template <class T>
void attentionRecordHoldsItsHeads() {
  auto& pool = Pool<T>::local();
  pool.rewind(Mark{});
  Rng rng(5);
  CausalSelfAttention<T> attention(6, 2, false, true, rng);
  const NodeRange<T> x = sines<T>(2 * 3 * 6, 0.1);  // two sequences of 3 tokens
  std::vector<Value<T>> xs(x.count), y(x.count);
  for (std::size_t k = 0; k < x.count; ++k) xs[k] = x[k];
  attention.forward(xs, 3, std::span<Value<T>>(y));
  const std::vector<Index> rows = nodesOf<T>(Op::AttentionRow);
  CHECK(rows.size() == 2 * 3 * 6);  // the whole block: one node per output, one record
  const Index* record = pool.links() + pool.args()[rows[0]].a;
  const auto a = readRecord<AttentionRecord<T>>(record);
  CHECK(a.sequences == 2 && a.tokens == 3 && a.heads == 2 && a.headSize == 3 && a.firstOutput == rows[0]);
  CHECK(sameBits(a.scale, T(1) / std::sqrt(T(3))));
  CHECK(pool.ops()[a.query] == Op::LinearRow && pool.ops()[a.key] == Op::LinearRow && pool.ops()[a.value] == Op::LinearRow);
  // Query, key and value without bias: one product, each token's three projections side by side.
  CHECK(a.stride == 3 * 6 && a.key == a.query + 6 && a.value == a.key + 6);
  const T* v = pool.values();
  for (std::size_t s = 0; s < 2; ++s)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t t = 0; t < 3; ++t) {
        std::vector<T> p(3);
        std::memcpy(p.data(), AttentionRecord<T>::weights(record) + ((s * 2 + h) * 9 + t * 3) * sizeof(T), 3 * sizeof(T));
        T total = 0;
        for (std::size_t u = 0; u < 3; ++u) {
          CHECK(u <= t || p[u] == T(0));  // the causal mask
          total += p[u];
        }
        CHECK_CLOSE(total, 1.0, 1e-6);
        for (std::size_t j = 0; j < 3; ++j) {
          T out = 0;
          for (std::size_t u = 0; u <= t; ++u) out += p[u] * v[a.value + a.in(s, u, h) + j];
          CHECK(sameBits(out, v[a.firstOutput + a.at(s, t, h) + j]));
        }
      }
  pool.rewind(Mark{});
}

}  // namespace

TEST_CASE("records: a constant and a record come back bit for bit, at any word") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  pool.appendLinks(1);
  const Index at = appendRecord<double>(-0.1);
  const LayerNormRecord<double> norm{3, 1, kNoIndex, 9, 12};
  const Index normAt = pool.appendLinks(norm.words());
  writeRecord(pool.links() + normAt, norm);
  LayerNormRecord<double>::setStats(pool.links() + normAt, 0, 0.25, -1.0 / 3.0);
  CHECK(at % 2 == 1 && normAt % 2 == 1 && kWords<LayerNormRecord<double>> == 5 && norm.words() == 9);
  CHECK(sameBits(readRecord<double>(pool.links() + at), -0.1));
  const auto back = readRecord<LayerNormRecord<double>>(pool.links() + normAt);
  CHECK(back.n == 3 && back.rows == 1 && back.firstGain == kNoIndex && back.firstBias == 9 && back.firstOutput == 12);
  const auto [mean, scale] = LayerNormRecord<double>::stats(pool.links() + normAt, 0);
  CHECK(sameBits(mean, 0.25) && sameBits(scale, -1.0 / 3.0));
  pool.rewind(Mark{});
}

TEST_CASE("records: an inner product's, with and without bias") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> x = sines<double>(5, 0.0), w = sines<double>(5, 1.0);
  const Value<double> b(0.5);
  const Value<double> plain = innerProduct(x, w), biased = innerProductWithBias(x, w, b);
  const auto p = readRecord<InnerProductRecord>(pool.links() + pool.args()[plain.index()].b);
  const auto q = readRecord<InnerProductRecord>(pool.links() + pool.args()[biased.index()].b);
  CHECK(p.n == 5 && p.bias == kNoIndex && q.n == 5 && q.bias == b.index());
  visitList(pool.links(), q.weights, [&](auto at) { CHECK(at(0) == w.first && at(4) == w.first + 4); });
  CHECK(plain.op() == Op::InnerProduct && biased.op() == Op::InnerProductWithBias);
  pool.rewind(Mark{});
}

TEST_CASE("records: a layer's rows over a block of tokens share one, with each token's input") {
  auto& pool = Pool<float>::local();
  pool.rewind(Mark{});
  Rng rng(3);
  const Linear<float> layer(4, 3, true, Activation::Tanh, rng);
  const NodeRange<float> x = sines<float>(8, 0.2);
  std::vector<Value<float>> xs(8), y(6);
  for (std::size_t k = 0; k < 8; ++k) xs[k] = x[k];
  layer.forward(xs, std::span<Value<float>>(y));
  const Index* record = pool.links() + pool.args()[y[5].index()].b;
  const auto r = readRecord<LinearRecord>(record);
  CHECK(pool.args()[y[0].index()].b == pool.args()[y[5].index()].b);
  CHECK(r.n == 4 && r.rows == 3 && r.firstWeight == layer.weights().first && r.firstBias == layer.biases().first);
  CHECK(r.firstOutput == y[0].index() && r.output(1, 2) == y[5].index() && r.activation == Activation::Tanh);
  for (std::size_t t = 0; t < 2; ++t) {
    CHECK(LinearRecord::inputLists(record)[t] == pool.args()[y[t * 3].index()].a);
    CHECK((pool.links()[LinearRecord::inputLists(record)[t]] & ~kRangeFlag) == x.first + 4 * t);
  }
  const auto affine = innerProductWithBias(std::span<const Value<float>>(xs).subspan(4, 4), layer.neuron(2).weights, layer.biases()[2]);
  CHECK(sameBits(std::tanh(affine.data()), y[5].data()));
  pool.rewind(Mark{});
}

TEST_CASE("records: a layer norm's, float and double, reproduce its outputs") {
  layerNormRecordHoldsItsOutputs<float>();
  layerNormRecordHoldsItsOutputs<double>();
  layerNormBlockHoldsItsRows<float>();
  layerNormBlockHoldsItsRows<double>();
}

TEST_CASE("records: an attention block's, float and double, reproduce its outputs") {
  attentionRecordHoldsItsHeads<float>();
  attentionRecordHoldsItsHeads<double>();
}

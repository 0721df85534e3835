// Layers: Neuron/Linear, Embedding, LayerNorm, causal self-attention, softmax cross-entropy.
// Gradients against finite differences here; against torch.autograd in tests/test_burtorch_module.py.
#include <cmath>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"
#include "gradcheck.hpp"

using namespace burtorch;
using V = Value<double>;

namespace {

// Leaves made before the graph, so that expectNodeGradients can nudge them.
NodeRange<double> inputLeaves(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  const NodeRange<double> x = leaves<double>(n);
  for (std::size_t k = 0; k < n; ++k) x[k].setData(rng.uniform(-1.0, 1.0));
  return x;
}

// Every node of a block: parameters and inputs, which were made one after the other.
NodeRange<double> span(Index first, Index end) { return {first, end - first}; }

// sum_k c_k y_k with fixed distinct c_k, so that every output matters to the scalar.
template <class T>
Value<T> weightedSum(std::span<const Value<T>> y) {
  Value<T> total = y[0] * T(0.3);
  for (std::size_t k = 1; k < y.size(); ++k) total = total + y[k] * static_cast<T>(0.3 + 0.17 * static_cast<double>(k));
  return total;
}

V weightedSum(std::span<const V> y) { return weightedSum<double>(y); }

// The values and gradients of a layer of 9 rows applied to tokens of 5 inputs, token t reading
// base nodes [starts[t], starts[t] + 5): in one call for all the tokens, or one call per token.
template <class T>
std::vector<T> blockGradients(const std::vector<std::size_t>& starts, bool oneCall) {
  using W = Value<T>;
  auto& pool = Pool<T>::local();
  pool.rewind(Mark{});
  Rng rng(7);
  const Linear<T> layer(5, 9, true, Activation::Tanh, rng);
  const NodeRange<T> x = leaves<T>(15);
  for (std::size_t k = 0; k < x.count; ++k) x[k].setData(static_cast<T>(std::sin(2.0 + 3.0 * static_cast<double>(k))));
  std::vector<W> base(x.count), tokens, y(9 * starts.size());
  for (std::size_t k = 0; k < x.count; ++k) base[k] = x[k] * T(1.5);  // operator nodes: swept, not leaves
  for (const std::size_t start : starts) tokens.insert(tokens.end(), base.begin() + start, base.begin() + start + 5);
  if (oneCall) {
    layer.forward(tokens, std::span<W>(y));
  } else {
    for (std::size_t t = 0; t < starts.size(); ++t)
      layer.forward(std::span<const W>(tokens).subspan(t * 5, 5), std::span<W>(y).subspan(t * 9, 9));
  }
  backward(weightedSum<T>(y));
  std::vector<T> out;
  for (const W& v : y) out.push_back(v.data());
  for (Index k = 0; k < x.first + x.count; ++k) out.push_back(W::fromIndex(k).grad());
  pool.rewind(Mark{});
  return out;
}

}  // namespace

TEST_CASE("Linear: PyTorch layout, loaded weights, forward values") {
  Pool<double>::local().rewind(Mark{});
  Rng rng(1);
  Linear<double> layer(2, 3, true, Activation::Identity, rng);
  CHECK(layer.parameters().size() == 9);
  const std::vector<double> w{1, 2, 3, 4, 5, 6}, b{0.5, -0.5, 1};
  CHECK(layer.load(w, b));
  CHECK(!layer.load(b, w));  // wrong sizes are refused
  const std::vector<V> x{V(1.0), V(-1.0)};
  const auto y = layer(x);
  CHECK(y.size() == 3 && y[0].data() == -0.5 && y[1].data() == -1.5 && y[2].data() == 0.0);
  CHECK(layer.neuron(1).weights.first == layer.parameters().first + 2);
  CHECK(layer.biases()[2].data() == 1.0);
  Pool<double>::local().rewind(Mark{});
}

TEST_CASE("Linear: gradients for every activation, with and without bias") {
  for (const Activation act : {Activation::Identity, Activation::Relu, Activation::Tanh, Activation::Sigmoid}) {
    for (const bool bias : {true, false}) {
      Pool<double>::local().rewind(Mark{});
      Rng rng(3);
      const Linear<double> layer(4, 3, bias, act, rng);
      const NodeRange<double> x = inputLeaves(4, 9);
      EXPECT_NODE_GRADIENTS("linear", span(0, x.first + x.count), [&] { return weightedSum(layer(x)); });
    }
  }
  Pool<double>::local().rewind(Mark{});
}

// The last row's node runs the layer's backward; the root may skip rows, that last one
// included, and x may not be a run (then each row runs its own).
TEST_CASE("Linear: gradients when the root reaches only some rows, and of a listed input") {
  for (const bool bias : {true, false}) {
    Pool<double>::local().rewind(Mark{});
    Rng rng(5);
    const Linear<double> layer(19, 5, bias, Activation::Identity, rng);  // 19: wide, short and scalar columns
    const NodeRange<double> x = inputLeaves(19, 11);
    const NodeRange<double> all = span(0, x.first + x.count);
    EXPECT_NODE_GRADIENTS("rows 1, 3", all, [&] { const auto y = layer(x); return y[1] * 0.7 + y[3]; });
    EXPECT_NODE_GRADIENTS("rows 0, 4", all, [&] { const auto y = layer(x); return y[0] + y[4] * 0.5; });
    EXPECT_NODE_GRADIENTS("listed x", all, [&] {
      std::vector<V> reversed;
      for (std::size_t k = x.count; k-- > 0;) reversed.push_back(x[k]);
      return weightedSum(layer(reversed));
    });
  }
  Pool<double>::local().rewind(Mark{});
}

// A block of tokens through one layer: the same values and gradients, bit for bit, as one call
// per token, whose rows' backward takes the tokens one after another.
TEST_CASE("Linear over a block of tokens: the bits of one call per token, and its gradients") {
  auto& pool = Pool<double>::local();
  // Tokens side by side, the same token twice, tokens that overlap: float goes through the
  // vector kernels that take two gradients in one pass, which must not merge a shared input's.
  for (const std::vector<std::size_t>& starts : {std::vector<std::size_t>{0, 5, 10}, {10, 0, 0}, {0, 3, 10, 1}}) {
    CHECK(blockGradients<double>(starts, true) == blockGradients<double>(starts, false));
    CHECK(blockGradients<float>(starts, true) == blockGradients<float>(starts, false));
  }
  for (const bool bias : {true, false}) {
    pool.rewind(Mark{});
    Rng rng(9);
    const Linear<double> layer(6, 4, bias, Activation::Identity, rng);
    const NodeRange<double> x = inputLeaves(18, 17);
    const NodeRange<double> all = span(0, x.first + x.count);
    const auto block = [&](std::vector<V> tokens) {
      std::vector<V> y(12);
      layer.forward(tokens, std::span<V>(y));
      return y;
    };
    std::vector<V> runs;
    for (std::size_t k = 0; k < x.count; ++k) runs.push_back(x[k]);
    EXPECT_NODE_GRADIENTS("tokens 0 and 2, some rows", all, [&] { const auto y = block(runs); return y[1] * 0.7 + y[10] - y[8]; });
    EXPECT_NODE_GRADIENTS("a listed token", all, [&] {
      std::vector<V> tokens = runs;
      std::swap(tokens[7], tokens[9]);
      return weightedSum(block(tokens));
    });
  }
  pool.rewind(Mark{});
}

TEST_CASE("Neuron::create owns its parameters") {
  Pool<double>::local().rewind(Mark{});
  Rng rng(5);
  const auto n = Neuron<double>::create(3, true, Activation::Tanh, rng);
  CHECK(n.hasBias() && n.bias.index() == 3 && n.weights.first == 0);
  const NodeRange<double> x = inputLeaves(3, 2);
  EXPECT_NODE_GRADIENTS("neuron", span(0, x.first + x.count), [&] { return n(x); });
  Pool<double>::local().rewind(Mark{});
}

TEST_CASE("Embedding: a lookup is a view of the row") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  Rng rng(2);
  Embedding<double> table(5, 3, rng);
  std::vector<double> values(15);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<double>(k);
  CHECK(table.load(values));
  const std::size_t before = pool.size();
  const NodeRange<double> row = table[3];
  CHECK(pool.size() == before);  // no node made
  CHECK(row[0].data() == 9.0 && row[2].data() == 11.0);
  backward(reduceSumOfSquares(row));
  CHECK(table[3][1].grad() == 20.0 && table[2][1].grad() == 0.0);
  pool.rewind(Mark{});
}

// A layer norm's gain and shift drawn near (1, 0) from `seed`, so that gradients meet both.
static bool loadRandomAffine(LayerNorm<double>& norm, std::size_t width, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<double> gamma(width), beta(width);
  for (double& g : gamma) g = rng.uniform(0.5, 1.5);
  for (double& b : beta) b = rng.uniform(-0.5, 0.5);
  return norm.load(gamma, beta);
}

TEST_CASE("LayerNorm: zero mean, unit variance, gradients") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const LayerNorm<double> plain(5, false, 0.0);
  const NodeRange<double> x = inputLeaves(5, 4);
  std::vector<V> y(5);
  plain.forward(x, std::span<V>(y));
  CHECK(std::abs(reduceMean(y).data()) < 1e-15);
  CHECK_CLOSE(reduceMeanSquares(y).data(), 1.0, 1e-13);
  pool.rewind(Mark{});

  LayerNorm<double> affine(4);
  CHECK(loadRandomAffine(affine, 4, 8));
  const NodeRange<double> in = inputLeaves(4, 6);
  EXPECT_NODE_GRADIENTS("layer norm", span(0, in.first + in.count), [&] {
    std::vector<V> out(4);
    affine.forward(in, std::span<V>(out));
    return weightedSum(out);
  });
  pool.rewind(Mark{});
}

// The highest output the root reaches runs the layer norm's backward for all of them.
TEST_CASE("LayerNorm: gradients when the root reaches only some outputs, through nodes") {
  for (const bool withAffine : {true, false}) {
    auto& pool = Pool<double>::local();
    pool.rewind(Mark{});
    LayerNorm<double> norm(6, withAffine);
    CHECK((!withAffine || loadRandomAffine(norm, 6, 12)));
    const NodeRange<double> in = inputLeaves(6, 7);
    const NodeRange<double> all = span(0, in.first + in.count);
    const auto normed = [&](bool reversed) {
      std::vector<V> x, out(6);
      for (std::size_t k = 0; k < 6; ++k) x.push_back(tanh(in[reversed ? 5 - k : k]));
      norm.forward(x, std::span<V>(out));
      return out;
    };
    EXPECT_NODE_GRADIENTS("outputs 1, 3", all, [&] { const auto y = normed(false); return y[1] * 0.7 + y[3]; });
    EXPECT_NODE_GRADIENTS("outputs 0, 5", all, [&] { const auto y = normed(false); return y[0] + y[5] * 0.5; });
    EXPECT_NODE_GRADIENTS("listed x", all, [&] { return weightedSum(normed(true)); });
  }
  Pool<double>::local().rewind(Mark{});
}

// Rows in one run of nodes (a block of tokens): one record and one backward for every row.
TEST_CASE("LayerNorm over a block of rows: gradients of all, one and two outputs") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  LayerNorm<double> norm(4);
  CHECK(loadRandomAffine(norm, 4, 31));
  const NodeRange<double> in = inputLeaves(3 * 4, 9);
  const NodeRange<double> all = span(0, in.first + in.count);
  const auto normed = [&] {
    std::vector<V> x, out(12);
    for (std::size_t k = 0; k < 12; ++k) x.push_back(tanh(in[k]));  // one run of nodes
    norm.forwardRows(x, std::span<V>(out));
    return out;
  };
  EXPECT_NODE_GRADIENTS("every row", all, [&] { return weightedSum(normed()); });
  EXPECT_NODE_GRADIENTS("output 5", all, [&] { return normed()[5]; });
  EXPECT_NODE_GRADIENTS("outputs 2, 9", all, [&] { const auto y = normed(); return y[2] * 0.7 + y[9]; });
  pool.rewind(Mark{});
}

TEST_CASE("LayerNorm: the values of the scalar graph, bit for bit") {
  auto& pool = Pool<float>::local();
  pool.rewind(Mark{});
  LayerNorm<float> norm(7);
  const std::vector<float> gamma{0.5f, 1.5f, 1.f, 0.75f, 1.25f, 2.f, 0.3f}, beta{0.1f, -0.2f, 0.3f, 0.f, 0.5f, -1.f, 0.25f};
  CHECK(norm.load(gamma, beta));
  std::vector<Value<float>> x;
  for (int k = 0; k < 7; ++k) x.push_back(Value<float>(0.3f * static_cast<float>(k * k) - 1.7f));
  std::vector<Value<float>> out(7);
  norm.forward(x, std::span<Value<float>>(out));
  const Value<float> mu = reduceMean(x);
  std::vector<Value<float>> c;
  for (const Value<float>& xi : x) c.push_back(xi - mu);
  const Value<float> scale = invSqrt(addConstant(reduceMeanSquares(c), 1e-5f));
  for (std::size_t k = 0; k < 7; ++k) CHECK(out[k].data() == (c[k] * scale * norm.gamma()[k] + norm.beta()[k]).data());
  pool.rewind(Mark{});
}

TEST_CASE("softmax and cross-entropy") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> logits = inputLeaves(5, 12);
  double z = 0;
  for (std::size_t k = 0; k < 5; ++k) z += std::exp(logits[k].data());
  CHECK_CLOSE(crossEntropy(logits, 2).data(), -std::log(std::exp(logits[2].data()) / z), 1e-14);
  std::vector<V> p(5);
  softmax(logits, std::span<V>(p));
  CHECK_CLOSE(reduceSum(p).data(), 1.0, 1e-15);
  CHECK_CLOSE(p[4].data(), std::exp(logits[4].data()) / z, 1e-14);
  EXPECT_NODE_GRADIENTS("cross-entropy", logits, [&] { return crossEntropy(logits, 2); });
  EXPECT_NODE_GRADIENTS("softmax", logits, [&] {
    std::vector<V> q(5);
    softmax(logits, std::span<V>(q));
    return weightedSum(q);
  });
  pool.rewind(Mark{});
}

TEST_CASE("causal self-attention: gradients of inputs and parameters") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  Rng rng(21);
  CausalSelfAttention<double> attention(4, 2, true, rng);
  const NodeRange<double> x = inputLeaves(3 * 4, 17);
  std::vector<V> handles(12), out(12);
  for (std::size_t k = 0; k < 12; ++k) handles[k] = x[k];
  EXPECT_NODE_GRADIENTS("attention", span(0, x.first + x.count), [&] {
    attention.forward(handles, 3, std::span<V>(out));
    return weightedSum(out);
  });
  pool.rewind(Mark{});
}

// Roots that reach only some of proj's rows (every head output still reaches them).
TEST_CASE("causal self-attention: gradients of one output, and of the first and last") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  Rng rng(23);
  CausalSelfAttention<double> attention(6, 2, false, true, rng);
  const NodeRange<double> x = inputLeaves(3 * 6, 19);
  std::vector<V> handles(18), out(18);
  for (std::size_t k = 0; k < 18; ++k) handles[k] = x[k];
  const auto attend = [&] {
    attention.forward(handles, 3, std::span<V>(out));
    return out;
  };
  const NodeRange<double> all = span(0, x.first + x.count);
  EXPECT_NODE_GRADIENTS("one output", all, [&] { return attend()[13]; });
  EXPECT_NODE_GRADIENTS("first and last", all, [&] { const auto y = attend(); return y[0] * 0.6 + y[17]; });
  pool.rewind(Mark{});
}

TEST_CASE("causal self-attention: a token does not see later tokens") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  Rng rng(4);
  CausalSelfAttention<double> attention(6, 3, false, rng);
  const NodeRange<double> x = inputLeaves(4 * 6, 3);
  std::vector<V> handles(24), out(24);
  for (std::size_t k = 0; k < 24; ++k) handles[k] = x[k];
  attention.forward(handles, 4, std::span<V>(out));
  backward(reduceSum(std::span<const V>(out).subspan(6, 6)));  // token 1's outputs
  bool early = false, late = true;
  for (std::size_t k = 0; k < 12; ++k) early = early || x[k].grad() != 0.0;
  for (std::size_t k = 12; k < 24; ++k) late = late && x[k].grad() == 0.0;
  CHECK(early && late);
  pool.rewind(Mark{});
}

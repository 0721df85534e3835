// Every operator's value and gradient: gradients against central finite differences in FP64.
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"
#include "gradcheck.hpp"

using namespace burtorch;
using V = Value<double>;
using Leaves = std::span<const V>;

namespace {

std::vector<double> randomInputs(std::size_t n, double lo, double hi, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<double> x(n);
  for (double& v : x) v = rng.uniform(lo, hi);
  return x;
}

}  // namespace

TEST_CASE("unary operators: values") {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const V x(0.7), n(-0.7);
  CHECK_CLOSE(relu(x).data(), 0.7, 1e-15);
  CHECK(relu(n).data() == 0.0);
  CHECK_CLOSE(burtorch::tanh(x).data(), std::tanh(0.7), 1e-15);
  CHECK_CLOSE(burtorch::exp(x).data(), std::exp(0.7), 1e-15);
  CHECK_CLOSE(negativeLog(x).data(), -std::log(0.7), 1e-15);
  CHECK_CLOSE(sigmoid(x).data(), 1 / (1 + std::exp(-0.7)), 1e-15);
  CHECK_CLOSE(inv(x).data(), 1 / 0.7, 1e-15);
  CHECK_CLOSE(sqr(x).data(), 0.49, 1e-15);
  CHECK_CLOSE(pow3(x).data(), 0.343, 1e-15);
  CHECK_CLOSE(burtorch::log(x).data(), std::log(0.7), 1e-15);
  CHECK_CLOSE(burtorch::sqrt(x).data(), std::sqrt(0.7), 1e-15);
  CHECK_CLOSE(invSqrt(x).data(), 1 / std::sqrt(0.7), 1e-15);
  CHECK_CLOSE((-x).data(), -0.7, 1e-15);
  CHECK_CLOSE(mulByConstant(x, 3.0).data(), 2.1, 1e-15);
  CHECK_CLOSE(addConstant(x, 3.0).data(), 3.7, 1e-15);
  CHECK_CLOSE(burtorch::pow(x, 2.5).data(), std::pow(0.7, 2.5), 1e-15);
  pool.rewind(mark);
}

TEST_CASE("unary operators: gradients") {
  // Points inside every operator's domain, away from relu's kink.
  for (const double x : {0.3, 1.7, 2.9}) {
    const std::vector<double> in{x};
    EXPECT_GRADIENTS("relu", in, [](Leaves v) { return relu(v[0]); });
    EXPECT_GRADIENTS("relu(-x)", in, [](Leaves v) { return relu(-v[0]); });
    EXPECT_GRADIENTS("tanh", in, [](Leaves v) { return burtorch::tanh(v[0]); });
    EXPECT_GRADIENTS("exp", in, [](Leaves v) { return burtorch::exp(v[0]); });
    EXPECT_GRADIENTS("negativeLog", in, [](Leaves v) { return negativeLog(v[0]); });
    EXPECT_GRADIENTS("sigmoid", in, [](Leaves v) { return sigmoid(v[0]); });
    EXPECT_GRADIENTS("inv", in, [](Leaves v) { return inv(v[0]); });
    EXPECT_GRADIENTS("sqr", in, [](Leaves v) { return sqr(v[0]); });
    EXPECT_GRADIENTS("pow3", in, [](Leaves v) { return pow3(v[0]); });
    EXPECT_GRADIENTS("log", in, [](Leaves v) { return burtorch::log(v[0]); });
    EXPECT_GRADIENTS("sqrt", in, [](Leaves v) { return burtorch::sqrt(v[0]); });
    EXPECT_GRADIENTS("invSqrt", in, [](Leaves v) { return invSqrt(v[0]); });
    EXPECT_GRADIENTS("neg", in, [](Leaves v) { return -v[0]; });
    EXPECT_GRADIENTS("mulByConstant", in, [](Leaves v) { return mulByConstant(v[0], -2.5); });
    EXPECT_GRADIENTS("addConstant", in, [](Leaves v) { return addConstant(v[0], 4.0); });
    EXPECT_GRADIENTS("pow", in, [](Leaves v) { return burtorch::pow(v[0], 2.5); });
    EXPECT_GRADIENTS("pow negative", in, [](Leaves v) { return burtorch::pow(v[0], -1.5); });
  }
}

TEST_CASE("relu backward multiplies by the indicator, not the output") {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const V x(0.5);
  const V y = relu(x) * 4.0;
  backward(y);
  CHECK(x.grad() == 4.0);  // the authors' build gives 4 * 0.5 = 2
  pool.rewind(mark);
}

TEST_CASE("binary operators: values") {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const V x(3.0), y(-2.0);
  CHECK((x + y).data() == 1.0);
  CHECK((x - y).data() == 5.0);
  CHECK((x * y).data() == -6.0);
  CHECK((x / y).data() == -1.5);
  CHECK(mean(x, y).data() == 0.5);
  CHECK(addSquares(x, y).data() == 13.0);
  CHECK(meanSquares(x, y).data() == 6.5);
  CHECK(negativeMean(x, y).data() == -0.5);
  CHECK((x + 1.0).data() == 4.0 && (1.0 + x).data() == 4.0 && (x - 1.0).data() == 2.0 && (1.0 - x).data() == -2.0);
  CHECK((x * 2.0).data() == 6.0 && (2.0 * x).data() == 6.0 && (x / 2.0).data() == 1.5 && (6.0 / x).data() == 2.0);
  pool.rewind(mark);
}

TEST_CASE("binary operators: gradients") {
  const auto in = randomInputs(2, 0.5, 2.0, 7);
  EXPECT_GRADIENTS("add", in, [](Leaves v) { return v[0] + v[1]; });
  EXPECT_GRADIENTS("sub", in, [](Leaves v) { return v[0] - v[1]; });
  EXPECT_GRADIENTS("mul", in, [](Leaves v) { return v[0] * v[1]; });
  EXPECT_GRADIENTS("div", in, [](Leaves v) { return v[0] / v[1]; });
  EXPECT_GRADIENTS("mean", in, [](Leaves v) { return mean(v[0], v[1]); });
  EXPECT_GRADIENTS("addSquares", in, [](Leaves v) { return addSquares(v[0], v[1]); });
  EXPECT_GRADIENTS("meanSquares", in, [](Leaves v) { return meanSquares(v[0], v[1]); });
  EXPECT_GRADIENTS("negativeMean", in, [](Leaves v) { return negativeMean(v[0], v[1]); });
  EXPECT_GRADIENTS("c - x", in, [](Leaves v) { return 3.0 - v[0]; });
  EXPECT_GRADIENTS("c / x", in, [](Leaves v) { return 3.0 / v[1]; });
  EXPECT_GRADIENTS("x / c", in, [](Leaves v) { return v[1] / 3.0; });
}

TEST_CASE("binary operators with the same node on both sides") {
  const std::vector<double> in{1.3};
  EXPECT_GRADIENTS("x + x", in, [](Leaves v) { return v[0] + v[0]; });
  EXPECT_GRADIENTS("x - x", in, [](Leaves v) { return v[0] - v[0]; });
  EXPECT_GRADIENTS("x * x", in, [](Leaves v) { return v[0] * v[0]; });
  EXPECT_GRADIENTS("x / x", in, [](Leaves v) { return v[0] / v[0]; });
  EXPECT_GRADIENTS("addSquares(x, x)", in, [](Leaves v) { return addSquares(v[0], v[0]); });
  EXPECT_GRADIENTS("meanSquares(x, x)", in, [](Leaves v) { return meanSquares(v[0], v[0]); });
}

TEST_CASE("n-ary operators: values") {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const std::vector<V> x{V(1.0), V(2.0), V(3.0), V(4.0), V(5.0)};
  CHECK(reduceSum(x).data() == 15.0);
  CHECK(reduceSub(x).data() == 1.0 - 14.0);
  CHECK(reduceMul(x).data() == 120.0);
  CHECK(reduceMean(x).data() == 3.0);
  CHECK(reduceSumOfSquares(x).data() == 55.0);
  CHECK(reduceMeanSquares(x).data() == 11.0);
  CHECK(reduceNegativeMean(x).data() == -3.0);
  CHECK_CLOSE(logSumExp(x).data(), std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(4.0) + std::exp(5.0)), 1e-15);
  const std::vector<V> w{V(1.0), V(-1.0), V(2.0), V(0.5), V(0.0)};
  CHECK(innerProduct(x, w).data() == 1.0 - 2.0 + 6.0 + 2.0);
  CHECK(innerProductWithBias(x, w, V(10.0)).data() == 17.0);
  CHECK(varianceBiased(x).data() == 2.0);
  CHECK(variance(x).data() == 2.5);
  const auto [m, ms] = reduceMeanAndMeanSquares(x);
  CHECK(m.data() == 3.0 && ms.data() == 11.0);
  const std::array<V, 0> none{};
  CHECK(reduceSum(none).data() == 0.0);
  pool.rewind(mark);
}

TEST_CASE("n-ary operators: gradients on random inputs") {
  for (const std::size_t n : {1u, 3u, 4u, 9u}) {
    const auto in = randomInputs(n, 0.2, 1.5, 11 + n);
    EXPECT_GRADIENTS("reduceSum", in, [](Leaves v) { return reduceSum(v); });
    EXPECT_GRADIENTS("reduceSub", in, [](Leaves v) { return reduceSub(v); });
    EXPECT_GRADIENTS("reduceMul", in, [](Leaves v) { return reduceMul(v); });
    EXPECT_GRADIENTS("reduceMean", in, [](Leaves v) { return reduceMean(v); });
    EXPECT_GRADIENTS("reduceSumOfSquares", in, [](Leaves v) { return reduceSumOfSquares(v); });
    EXPECT_GRADIENTS("reduceMeanSquares", in, [](Leaves v) { return reduceMeanSquares(v); });
    EXPECT_GRADIENTS("reduceNegativeMean", in, [](Leaves v) { return reduceNegativeMean(v); });
    EXPECT_GRADIENTS("logSumExp", in, [](Leaves v) { return logSumExp(v); });
    if (n > 1) {
      EXPECT_GRADIENTS("varianceBiased", in, [](Leaves v) { return varianceBiased(v); });
      EXPECT_GRADIENTS("variance", in, [](Leaves v) { return variance(v); });
      EXPECT_GRADIENTS("reduceMeanAndMeanSquares", in, [](Leaves v) {
        const auto [m, ms] = reduceMeanAndMeanSquares(v);
        return m * 2.0 + ms;
      });
    }
  }
  const auto in = randomInputs(10, -1.5, 1.5, 5);
  EXPECT_GRADIENTS("innerProduct", in, [](Leaves v) { return innerProduct(v.subspan(0, 5), v.subspan(5, 5)); });
  EXPECT_GRADIENTS("innerProductWithBias", in,
                   [](Leaves v) { return innerProductWithBias(v.subspan(0, 4), v.subspan(4, 4), v[9]); });
}

TEST_CASE("n-ary operators: an operand listed twice gets both contributions") {
  const std::vector<double> in{0.7, 1.9};
  EXPECT_GRADIENTS("reduceSub(x, x, y)", in, [](Leaves v) { return reduceSub(std::array{v[0], v[0], v[1]}); });
  EXPECT_GRADIENTS("reduceSub(y, x, y)", in, [](Leaves v) { return reduceSub(std::array{v[1], v[0], v[1]}); });
  EXPECT_GRADIENTS("reduceMul(x, x, y)", in, [](Leaves v) { return reduceMul(std::array{v[0], v[0], v[1]}); });
  EXPECT_GRADIENTS("innerProduct(x, x)", in, [](Leaves v) { return innerProduct(v, v); });
  EXPECT_GRADIENTS("logSumExp(x, x)", in, [](Leaves v) { return logSumExp(std::array{v[0], v[0]}); });
}

TEST_CASE("reduceMul with zero factors") {
  EXPECT_GRADIENTS("one zero", (std::vector<double>{2.0, 0.0, 3.0}), [](Leaves v) { return reduceMul(v); });
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const std::vector<V> x{V(2.0), V(0.0), V(0.0)};
  backward(reduceMul(x));
  CHECK(x[0].grad() == 0.0 && x[1].grad() == 0.0 && x[2].grad() == 0.0);
  pool.rewind(mark);
}

TEST_CASE("n-ary operators accept ranges, strided views and shared recorded lists") {
  const auto in = randomInputs(6, -1.0, 1.0, 3);
  // Leaves are consecutive, so a NodeRange over them is the same list as the span.
  EXPECT_GRADIENTS("node range", in, [](Leaves v) {
    return innerProduct(v.subspan(0, 3), NodeRange<double>{v[3].index(), 3});
  });
  EXPECT_GRADIENTS("strided", in, [](Leaves v) {
    return reduceSumOfSquares(StridedValues<double>{v.data() + 1, 3, 2}) + reduceSum(StridedValues<double>{v.data(), 3, 2});
  });
  EXPECT_GRADIENTS("shared list", in, [](Leaves v) {
    const auto xs = record(v.subspan(0, 3));
    return innerProduct(xs, v.subspan(3, 3)) * innerProduct(xs, std::array{v[5], v[4], v[3]});
  });
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const std::vector<V> x{V(1.0), V(2.0), V(3.0)};
  const std::size_t linksBefore = pool.linkCount();
  (void)reduceSum(NodeRange<double>{x[0].index(), 3});
  CHECK(pool.linkCount() - linksBefore == 1);  // a run of nodes is one link word
  pool.rewind(mark);
}

TEST_CASE("logSumExp does not overflow") {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const std::vector<V> x{V(1000.0), V(1000.0)};
  const V y = logSumExp(x);
  CHECK_CLOSE(y.data(), 1000.0 + std::log(2.0), 1e-15);
  backward(y);
  CHECK_CLOSE(x[0].grad(), 0.5, 1e-12);  // 1000 + log 2 keeps 13 digits of log 2
  pool.rewind(mark);
}

TEST_CASE("in-place operators make a new node and rebind") {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const V a(2.0);
  V c = a * 3.0;
  const V before = c;
  c += V(1.0);
  CHECK(c.index() != before.index());
  CHECK(before.data() == 6.0 && c.data() == 7.0);
  c -= 2.0;
  c *= V(2.0);
  c /= 5.0;
  CHECK_CLOSE(c.data(), 2.0, 1e-15);
  backward(c);
  CHECK_CLOSE(a.grad(), 3.0 * 2.0 / 5.0, 1e-15);
  pool.rewind(mark);
}

TEST_CASE("float32 values and gradients") {
  auto& pool = Pool<float>::local();
  const Mark mark = pool.mark();
  const Value<float> a(-41.0f), b(2.0f);
  const auto e = (a + b) - (a * b + pow3(b));
  const auto g = sqr(e) / Value<float>(2.0f);
  backward(g);
  CHECK(g.data() == 612.5f && a.grad() == -35.0f && b.grad() == 1050.0f);
  const std::vector<Value<float>> x{Value(1.0f), Value(2.0f), Value(3.0f)};
  const auto y = innerProduct(x, x) + logSumExp(x);
  backward(y);
  CHECK(check::close(x[2].grad(), 6.0 + std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-6));
  pool.rewind(mark);
}

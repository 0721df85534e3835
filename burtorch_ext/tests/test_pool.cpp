// The pool: rewind, growth, gradient zeroing, save/load, DOT export, the RNG.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"

using namespace burtorch;
using V = Value<double>;

namespace {

long fileSize(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return -1;
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fclose(f);
  return size;
}

std::string tempPath(const char* name) {
  const char* dir = std::getenv("BURTORCH_TEST_TMP");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

}  // namespace

TEST_CASE("rewind keeps parameters, their values and gradients") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> params = leaves<double>(4, 0.5);
  params[2].setData(-1.25);
  const Mark mark = pool.mark();
  for (int step = 0; step < 3; ++step) {
    pool.rewind(mark);
    const V loss = reduceSumOfSquares(params) * 0.5;
    backward(loss);
  }
  pool.rewind(mark);
  CHECK(pool.size() == mark.nodes && pool.linkCount() == mark.links);
  CHECK(params[0].data() == 0.5 && params[2].data() == -1.25);
  CHECK(params[2].grad() == -3.75);  // three steps accumulated
  const V next(7.0);
  CHECK(next.index() == mark.nodes);  // the step's nodes are reused
  zeroGrad(params);
  CHECK(params[0].grad() == 0.0 && params[3].grad() == 0.0);
  pool.rewind(Mark{});
}

TEST_CASE("growing the pool keeps every node") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  std::vector<V> xs;
  for (int k = 0; k < 5000; ++k) xs.push_back(V(k * 0.5));
  V sum = reduceSum(xs);
  CHECK(sum.data() == 0.5 * 4999.0 * 5000.0 / 2.0);
  backward(sum);
  bool ok = true;
  for (int k = 0; k < 5000; ++k) ok = ok && xs[k].data() == k * 0.5 && xs[k].grad() == 1.0;
  CHECK(ok);
  CHECK(pool.capacity() >= 5001);
  pool.rewind(Mark{});
}

TEST_CASE("save then load: 7 FP64 activations are 56 bytes, byte for byte") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const V a(-4.0), b(2.0);
  const V first = a + b;
  V last = first;
  for (int k = 0; k < 6; ++k) last = last * b + 0.1 * k;  // 7 activations in consecutive nodes
  CHECK(last.index() - first.index() == 12);             // two nodes per step: the range has 13
  const std::string path = tempPath("burtorch_seven.bin");
  const V seventh = V::fromIndex(first.index() + 6);
  std::vector<double> original(pool.values() + first.index(), pool.values() + first.index() + 7);
  CHECK(save(path.c_str(), first, seventh));
  CHECK(fileSize(path.c_str()) == 56);
  for (Index i = first.index(); i <= seventh.index(); ++i) V::fromIndex(i).setData(0.0);
  CHECK(load(path.c_str(), first, seventh));
  CHECK(std::memcmp(original.data(), pool.values() + first.index(), 56) == 0);

  backward(last);
  CHECK(save(path.c_str(), first, seventh, Part::ValuesAndGrads));
  CHECK(fileSize(path.c_str()) == 112);
  const double grad = first.grad();
  first.setGrad(0.0);
  CHECK(load(path.c_str(), first, seventh, Part::ValuesAndGrads));
  CHECK(first.grad() == grad);
  CHECK(!load(path.c_str(), first, seventh));  // 112 bytes are not 7 values
  CHECK(save(path.c_str(), first, seventh));      // over the longer file: cut to 56 bytes
  CHECK(fileSize(path.c_str()) == 56 && load(path.c_str(), first, seventh));
  CHECK(!save(path.c_str(), seventh, first));  // reversed range
  std::remove(path.c_str());
  pool.rewind(Mark{});
}

TEST_CASE("DOT export names every reached node and edge") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const V a(-41.0), b(2.0);
  const V unrelated(9.0);
  const V g = sqr(a * b) * 0.5;
  backward(g);
  const std::array<NodeLabel<double>, 2> labels{{{a, "a"}, {b, "b{1}"}}};
  const std::string dot = toDot(g, std::span<const NodeLabel<double>>(labels));
  CHECK(dot.rfind("digraph burtorch {", 0) == 0);
  CHECK(dot.find("{a | leaf | data -41 | grad ") != std::string::npos);
  CHECK(dot.find("b\\{1\\}") != std::string::npos);
  CHECK(dot.find("mulByConstant 0.5") != std::string::npos);
  CHECK(dot.find("n0 -> n3;") != std::string::npos && dot.find("n1 -> n3;") != std::string::npos);
  CHECK(dot.find("#2}") == std::string::npos);  // `unrelated` is not reached
  pool.rewind(Mark{});
}

TEST_CASE("the RNG is seedable and uniform in [-1, 1)") {
  Rng one(42), two(42), other(43);
  bool same = true, differs = false, inside = true;
  double sum = 0;
  for (int k = 0; k < 10000; ++k) {
    const double x = one.uniform(-1.0, 1.0);
    same = same && x == two.uniform(-1.0, 1.0);
    differs = differs || x != other.uniform(-1.0, 1.0);
    inside = inside && x >= -1.0 && x < 1.0;
    sum += x;
  }
  CHECK(same && differs && inside);
  CHECK(std::abs(sum / 10000) < 0.05);
}

// The paper's tiny and small graphs, and what backward() promises about gradients.
#include <array>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"
#include "scalar_graphs.hpp"

using namespace burtorch;
using V = Value<double>;

TEST_CASE("tiny graph: g = 612.5, dg/da = -35, dg/db = 1050") {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const V a(-41.0), b(2.0);
  const V g = driver::TinyGraph::build(a, b);
  backward(g);
  CHECK(g.data() == 612.5);
  CHECK(a.grad() == -35.0);
  CHECK(b.grad() == 1050.0);
  CHECK(pool.size() - mark.nodes == 10);  // the paper's 10 nodes
  pool.rewind(mark);
}

TEST_CASE("small graph: PyTorch's and micrograd's gradients") {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  const V a(-4.0), b(2.0);
  const V g = driver::SmallGraph::build(a, b);
  backward(g);
  CHECK_CLOSE(g.data(), 2421.0 / 98.0, 1e-14);
  CHECK_CLOSE(a.grad(), 47620.0 / 343.0, 1e-13);  // 138.8338..., not the authors' 104.125
  CHECK_CLOSE(b.grad(), 221433.0 / 343.0, 1e-13);  // 645.5773..., not 680.286
  CHECK(pool.size() - mark.nodes == 32);  // the paper's 32 nodes
  pool.rewind(mark);
}

TEST_CASE("gradients accumulate into leaves across backward calls until zeroed") {
  auto& pool = Pool<double>::local();
  const V p(3.0);
  const Mark mark = pool.mark();
  for (int step = 0; step < 3; ++step) {
    pool.rewind(mark);
    backward(p * p);
  }
  CHECK(p.grad() == 18.0);
  zeroGrad(p, p);
  CHECK(p.grad() == 0.0);
  pool.rewind(Mark{});
}

TEST_CASE("backward from one root ignores nodes it does not reach") {
  auto& pool = Pool<double>::local();
  const V p(2.0), q(5.0);
  const V first = p * q;   // its gradient is left set by the first backward
  const V second = p * 10.0;
  backward(first);
  zeroGrad(p, q);
  backward(second);  // `first` lies between p and `second` but must not propagate again
  CHECK(p.grad() == 10.0);
  CHECK(q.grad() == 0.0);
  pool.rewind(Mark{});
}

TEST_CASE("backwardWithScratch reuses caller scratch and leaves it clear") {
  auto& pool = Pool<double>::local();
  BackwardScratch scratch;
  const Mark mark = pool.mark();
  for (int step = 0; step < 5; ++step) {
    pool.rewind(mark);
    const V a(-4.0), b(2.0);
    const V g = driver::SmallGraph::build(a, b);
    backwardWithScratch(g, scratch);
    CHECK_CLOSE(a.grad(), 47620.0 / 343.0, 1e-13);
  }
  const bool* flags = scratch.fit(pool.size(), 0);  // floor 0: every flag, leaves included
  bool clear = true;
  for (std::size_t i = 0; i < pool.size(); ++i) clear = clear && !flags[i];
  CHECK(clear);
  pool.rewind(mark);
}

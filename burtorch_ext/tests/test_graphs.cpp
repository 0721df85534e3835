// The paper's tiny and small graphs, what backward() promises about gradients, and the driver's
// two loops over them (ours, and the authors' that --timing paper runs).
#include <array>
#include <span>
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

namespace {

// The nodes a workload makes before its loop and in each step, its root's op, its outputs.
struct Made {
  std::size_t beforeLoop, perStep;
  Op root;
  std::array<driver::Param, 3> outputs;
};

template <class Workload>
Made run(std::span<const driver::Param> params) {
  auto& pool = Pool<double>::local();
  const Mark mark = pool.mark();
  Workload step(params);
  const std::size_t beforeLoop = pool.size() - mark.nodes;
  step();
  const std::size_t afterFirst = pool.size();
  step();
  Made made{beforeLoop, pool.size() - mark.nodes - beforeLoop, pool.ops()[pool.size() - 1], step.outputs()};
  CHECK(pool.size() == afterFirst);  // each step drops the previous one's nodes
  pool.rewind(mark);
  return made;
}

}  // namespace

TEST_CASE("tiny graph, authors' loop: a and b are new nodes every step, the root is f * 0.5") {
  const auto& params = driver::TinyGraph::kDefaults;
  const auto paper = run<driver::AuthorsScalarGraphWorkload<driver::TinyGraph>>(params);
  CHECK(paper.beforeLoop == 0 && paper.perStep == 10);  // a and b among each step's 10 nodes
  CHECK(paper.root == Op::Mul);
  const auto lean = run<driver::ScalarGraphWorkload<driver::TinyGraph>>(params);
  CHECK(lean.beforeLoop == 2 && lean.perStep == 8);  // a and b made once
  CHECK(lean.root == Op::Div);
  for (const auto& made : {paper.outputs, lean.outputs}) {
    CHECK(made[0].value == 612.5 && made[1].value == -35.0 && made[2].value == 1050.0);
  }
}

TEST_CASE("small graph, authors' loop: a and b are new nodes every step, same gradients") {
  const auto& params = driver::SmallGraph::kDefaults;
  const auto paper = run<driver::AuthorsScalarGraphWorkload<driver::SmallGraph>>(params);
  const auto lean = run<driver::ScalarGraphWorkload<driver::SmallGraph>>(params);
  CHECK(paper.beforeLoop == 0 && paper.perStep == 32);
  CHECK(lean.beforeLoop == 2 && lean.perStep == 30);
  CHECK(paper.root == lean.root);
  for (std::size_t k = 0; k < 3; ++k) CHECK(paper.outputs[k].value == lean.outputs[k].value);
  CHECK_CLOSE(paper.outputs[1].value, 47620.0 / 343.0, 1e-13);
}

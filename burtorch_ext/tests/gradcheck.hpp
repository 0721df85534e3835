// Gradients from backward() against central finite differences, in FP64.
#pragma once

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"

namespace gradcheck {

using V = burtorch::Value<double>;

inline std::vector<V> leavesOf(const std::vector<double>& inputs) {
  std::vector<V> x;
  for (const double v : inputs) x.push_back(V(v));
  return x;
}

// f builds a scalar from the leaves it is given. Its gradient from one backward pass must match
// (f(x + h e_k) - f(x - h e_k)) / 2h for every input k.
template <class F>
void expectGradients(const char* what, const std::vector<double>& inputs, int line, F f) {
  auto& pool = burtorch::Pool<double>::local();
  const burtorch::Mark mark = pool.mark();
  const std::vector<V> x = leavesOf(inputs);
  const V y = f(std::span<const V>(x));
  burtorch::backward(y);
  std::vector<double> analytic;
  for (const V& xi : x) analytic.push_back(xi.grad());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const double h = 1e-5 * std::max(1.0, std::abs(inputs[k]));
    const auto at = [&](double shift) {
      pool.rewind(mark);
      std::vector<double> moved = inputs;
      moved[k] += shift;
      const std::vector<V> xs = leavesOf(moved);
      return f(std::span<const V>(xs)).data();
    };
    const double numeric = (at(h) - at(-h)) / (2 * h);
    const double scale = std::max({1.0, std::abs(numeric), std::abs(analytic[k])});
    if (!(std::abs(numeric - analytic[k]) <= 1e-6 * scale)) {
      check::fail(__FILE__, line, std::string(what) + ": d/dx" + std::to_string(k) + " backward " +
                                      std::to_string(analytic[k]) + " vs finite differences " + std::to_string(numeric));
    }
  }
  pool.rewind(mark);
}

}  // namespace gradcheck

// Variadic so that a lambda with top-level commas (structured bindings) passes through.
#define EXPECT_GRADIENTS(what, inputs, ...) gradcheck::expectGradients(what, inputs, __LINE__, __VA_ARGS__)

namespace gradcheck {

// The same for nodes created before the graph (a layer's parameters, or inputs made as leaves
// before the mark): `build` makes the scalar from their current values.
template <class F>
void expectNodeGradients(const char* what, burtorch::NodeRange<double> nodes, int line, F build) {
  auto& pool = burtorch::Pool<double>::local();
  const burtorch::Mark mark = pool.mark();
  burtorch::zeroGrad(nodes);
  burtorch::backward(build());
  std::vector<double> analytic;
  for (std::size_t k = 0; k < nodes.size(); ++k) analytic.push_back(nodes[k].grad());
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const double x = nodes[k].data();
    const double h = 1e-5 * std::max(1.0, std::abs(x));
    const auto at = [&](double shifted) {
      pool.rewind(mark);
      nodes[k].setData(shifted);
      return build().data();
    };
    const double numeric = (at(x + h) - at(x - h)) / (2 * h);
    nodes[k].setData(x);
    const double scale = std::max({1.0, std::abs(numeric), std::abs(analytic[k])});
    if (!(std::abs(numeric - analytic[k]) <= 1e-6 * scale)) {
      check::fail(__FILE__, line, std::string(what) + ": node " + std::to_string(k) + " backward " +
                                      std::to_string(analytic[k]) + " vs finite differences " + std::to_string(numeric));
    }
  }
  pool.rewind(mark);
}

}  // namespace gradcheck

#define EXPECT_NODE_GRADIENTS(what, nodes, ...) gradcheck::expectNodeGradients(what, nodes, __LINE__, __VA_ARGS__)

// Graphviz DOT export of the graph a root reaches: one record per node with its label (if
// given), operator, value, gradient and index; one edge per operand (n-ary operands included).
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "burtorch/add_block.hpp"
#include "burtorch/attention.hpp"
#include "burtorch/inner_product.hpp"
#include "burtorch/layer_norm.hpp"
#include "burtorch/linear.hpp"
#include "burtorch/lists.hpp"
#include "burtorch/loss.hpp"
#include "burtorch/scalar_ops.hpp"

namespace burtorch {

template <class T>
struct NodeLabel {
  Value<T> node;
  std::string_view label;
};

namespace detail {

inline bool isUnary(Op op) noexcept { return op >= Op::Relu && op <= Op::PowConst; }
inline bool isBinary(Op op) noexcept { return op >= Op::Add && op <= Op::NegMean; }
inline bool isReduce(Op op) noexcept { return op >= Op::ReduceSum && op <= Op::LogSumExp; }

// Calls f(operand) for every operand of node i, in order.
template <class T, class F>
void forEachOperand(const Pool<T>& pool, Index i, F f) {
  const Op op = pool.ops()[i];
  const Args args = pool.args()[i];
  const Index* links = pool.links();
  if (isUnary(op)) {
    f(args.a);
  } else if (isBinary(op)) {
    f(args.a);
    f(args.b);
  } else if (isReduce(op)) {
    visitList(links, args.a, [&](auto at) { for (std::size_t k = 0; k < args.b; ++k) f(at(k)); });
  } else if (op == Op::InnerProduct || op == Op::InnerProductWithBias) {
    const auto product = readRecord<InnerProductRecord>(links + args.b);
    visitList(links, args.a, [&](auto at) { for (std::size_t k = 0; k < product.n; ++k) f(at(k)); });
    visitList(links, product.weights, [&](auto at) { for (std::size_t k = 0; k < product.n; ++k) f(at(k)); });
    if (product.bias != kNoIndex) f(product.bias);
  } else if (op == Op::LinearRow) {
    const auto layer = readRecord<LinearRecord>(links + args.b);
    const std::size_t row = (i - layer.firstOutput) % layer.rows;
    visitList(links, args.a, [&](auto at) { for (std::size_t k = 0; k < layer.n; ++k) f(at(k)); });
    for (std::size_t k = 0; k < layer.n; ++k) f(layer.weights(row) + static_cast<Index>(k));
    if (layer.hasBias()) f(layer.firstBias + static_cast<Index>(row));
  } else if (op == Op::LayerNormRow) {
    const auto norm = readRecord<LayerNormRecord<T>>(links + args.b);
    const std::size_t first = (i - norm.firstOutput) / norm.n * norm.n, row = i - norm.firstOutput - first;
    visitList(links, args.a, [&](auto at) { for (std::size_t k = 0; k < norm.n; ++k) f(at(first + k)); });
    if (norm.firstGain != kNoIndex) {
      f(norm.firstGain + static_cast<Index>(row));
      f(norm.firstBias + static_cast<Index>(row));
    }
  } else if (op == Op::AttentionRow) {
    const auto a = readRecord<AttentionRecord<T>>(links + args.a);
    const std::size_t k = i - a.firstOutput, d = a.dModel(), sequence = k / d / a.tokens, t = k / d % a.tokens;
    const std::size_t head = k % d / a.headSize, j = k % a.headSize;
    for (std::size_t c = 0; c < a.headSize; ++c) f(a.query + static_cast<Index>(a.at(sequence, t, head) + c));
    for (std::size_t u = 0; u <= t; ++u)
      for (std::size_t c = 0; c < a.headSize; ++c) f(a.key + static_cast<Index>(a.at(sequence, u, head) + c));
    for (std::size_t u = 0; u <= t; ++u) f(a.value + static_cast<Index>(a.at(sequence, u, head) + j));
  } else if (op == Op::AddBlock) {
    const auto sum = readRecord<AddBlockRecord>(links + args.a);
    const std::size_t k = i - sum.firstOutput;
    visitList(links, sum.x, [&](auto at) { f(at(k)); });
    visitList(links, sum.y, [&](auto at) { f(at(k)); });
  } else if (op == Op::CrossEntropyBlock) {
    const auto ce = readRecord<CrossEntropyRecord<T>>(links + args.a);
    const std::size_t first = (i - ce.firstOutput) * ce.rowsPerLoss * ce.vocab;
    for (std::size_t k = 0; k < ce.rowsPerLoss * ce.vocab; ++k) f(ce.firstLogit + static_cast<Index>(first + k));
  }
}

inline void appendEscaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    if (c == '{' || c == '}' || c == '|' || c == '<' || c == '>' || c == '"' || c == '\\') out += '\\';
    out += c;
  }
}

inline void appendNumber(std::string& out, double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.10g", x);
  out += buffer;
}

}  // namespace detail

template <class T>
std::string toDot(Value<T> root, std::span<const NodeLabel<T>> labels = {}) {
  const Pool<T>& pool = Pool<T>::local();
  const Index r = root.index();
  BURTORCH_ASSERT(r < pool.size());
  std::vector<bool> reached(static_cast<std::size_t>(r) + 1, false);
  reached[r] = true;
  for (Index i = r + 1; i-- > 0;) {
    if (reached[i]) detail::forEachOperand(pool, i, [&](Index j) { reached[j] = true; });
  }
  std::string out = "digraph burtorch {\n  rankdir=BT;\n  node [shape=record];\n";
  for (Index i = 0; i <= r; ++i) {
    if (!reached[i]) continue;
    const Op op = pool.ops()[i];
    out += "  n" + std::to_string(i) + " [label=\"{";
    for (const NodeLabel<T>& l : labels) {
      if (l.node.index() == i) {
        detail::appendEscaped(out, l.label);
        out += " | ";
      }
    }
    out += opName(op);
    if (op == Op::MulConst || op == Op::AddConst || op == Op::PowConst) {
      out += ' ';
      detail::appendNumber(out, detail::readRecord<T>(pool.links() + pool.args()[i].b));
    }
    out += " | data ";
    detail::appendNumber(out, pool.values()[i]);
    out += " | grad ";
    detail::appendNumber(out, pool.grads()[i]);
    out += " | #" + std::to_string(i) + "}\"];\n";
    detail::forEachOperand(pool, i, [&](Index j) { out += "  n" + std::to_string(j) + " -> n" + std::to_string(i) + ";\n"; });
  }
  return out + "}\n";
}

}  // namespace burtorch

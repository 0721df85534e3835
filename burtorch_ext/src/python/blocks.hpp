// Batch-level calls of the module: a Nodes is a block of node handles held in C++ (a layer's
// outputs over every token of a graph), so that a model written in Python makes one call per
// layer, not one Python object per node; ids and targets come as numpy arrays (training.hpp
// trains with them). module.cpp binds these; it binds each layer's Nodes call before its list
// call, as pybind11 would take a Nodes for a list of Values.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "burtorch/burtorch.hpp"

namespace burtorch::python {

namespace py = pybind11;

template <class T>
struct Nodes {
  std::vector<Value<T>> values;

  std::span<const Value<T>> live() const {
    // The highest index, not a test per node: a loop without an exit vectorises (a GPT b = 64 step
    // checks some 160,000 handles).
    Index top = 0;
    for (const Value<T>& v : values) top = std::max(top, v.index());
    if (!values.empty() && top >= Pool<T>::local().size())
      throw py::index_error("this Nodes' nodes no longer exist (the pool was rewound below them)");
    return values;
  }
};

// Row ids and targets as numpy arrays of int64 (caster below). A C-contiguous int64 array is read
// where it lies: pybind11's array_t caster asked numpy for a new view of it on every call, 0.5 us of
// a GPT b = 1 step's two calls that take ids (a step is ~100 us).
struct Ids {
  py::array array;

  const std::int64_t* data() const { return static_cast<const std::int64_t*>(array.data()); }
  std::size_t size() const { return static_cast<std::size_t>(array.size()); }
  std::size_t ndim() const { return static_cast<std::size_t>(array.ndim()); }
  std::size_t shape(std::size_t k) const { return static_cast<std::size_t>(array.shape(static_cast<py::ssize_t>(k))); }
};

// An id checked against the number of rows it indexes.
inline std::size_t idOf(const Ids& ids, std::size_t k, std::size_t rows, const char* what) {
  const std::int64_t id = ids.data()[k];
  if (id < 0 || static_cast<std::size_t>(id) >= rows) throw py::index_error(std::string(what) + " out of range");
  return static_cast<std::size_t>(id);
}

// Every id checked, before a call makes any node.
inline void checkIds(const Ids& ids, std::size_t rows, const char* what) {
  for (std::size_t k = 0; k < ids.size(); ++k) idOf(ids, k, rows, what);
}

template <class T>
Nodes<T> sum(const Nodes<T>& x, const Nodes<T>& y) {
  if (x.values.size() != y.values.size()) throw py::value_error("Nodes of different lengths");
  const std::span<const Value<T>> a = x.live(), b = y.live();
  Nodes<T> out{std::vector<Value<T>>(a.size())};
  addBlock(a, b, std::span<Value<T>>(out.values));
  return out;
}

// The table's rows that ids (any shape) name, one after the other: handles only, no new node.
template <class T>
Nodes<T> rows(const Embedding<T>& table, const Ids& ids) {
  const std::size_t d = table.dim();
  Nodes<T> out{std::vector<Value<T>>(ids.size() * d)};
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const NodeRange<T> row = table[idOf(ids, k, table.count(), "row id")];
    for (std::size_t i = 0; i < d; ++i) out.values[k * d + i] = row[i];
  }
  return out;
}

// Each token's row of `tokens` plus the row of `positions` at its place in its window (ids:
// (windows, tokens)): one call, the driver's embedding sum, not two lookups and a sum crossing
// from Python three times.
// Windows of token ids, (windows, tokens), each token with its row of `positions`, each id one of
// `tokens`' rows (`what` names them in the error).
template <class T>
void checkWindows(const Ids& ids, const Embedding<T>& tokens, const Embedding<T>& positions, const char* what) {
  if (ids.ndim() != 2 || ids.shape(1) == 0 || ids.shape(1) > positions.count() || tokens.dim() != positions.dim())
    throw py::value_error("ids: (windows, tokens), at most a row of positions per token; tables of one dim");
  checkIds(ids, tokens.count(), what);
}

template <class T>
Nodes<T> embed(const Embedding<T>& tokens, const Embedding<T>& positions, const Ids& ids) {
  checkWindows(ids, tokens, positions, "row id");
  const std::size_t size = ids.size() * tokens.dim();
  std::vector<Value<T>> tokenRows(size), positionRows(size);
  Nodes<T> out{std::vector<Value<T>>(size)};
  embeddingSum(tokens, positions, ids.shape(1), [&](std::size_t k) { return static_cast<std::size_t>(ids.data()[k]); },
               std::span<Value<T>>(tokenRows), std::span<Value<T>>(positionRows), std::span<Value<T>>(out.values));
  return out;
}

template <class T>
Nodes<T> linear(const Linear<T>& layer, const Nodes<T>& x) {
  if (x.values.empty() || x.values.size() % layer.inputs() != 0) throw py::value_error("wrong number of inputs");
  Nodes<T> out{std::vector<Value<T>>(x.values.size() / layer.inputs() * layer.outputs())};
  layer.forward(x.live(), std::span<Value<T>>(out.values));
  return out;
}

// The layer over the table's rows that each token looks up, concatenated (ids[t]: token t's
// rows), read in place.
template <class T>
Nodes<T> linearOverRows(const Linear<T>& layer, const Embedding<T>& table, const Ids& ids) {
  if (ids.ndim() != 2 || ids.shape(1) * table.dim() != layer.inputs())
    throw py::value_error("ids: (tokens, inputs / table dim) row ids");
  const std::size_t tokens = ids.shape(0), perToken = ids.shape(1);
  std::vector<Index> firsts(tokens * perToken);
  for (std::size_t k = 0; k < firsts.size(); ++k) firsts[k] = table[idOf(ids, k, table.count(), "row id")].first;
  Nodes<T> out{std::vector<Value<T>>(tokens * layer.outputs())};
  layer.forwardEach(tokens, [&](std::size_t t) {
    return Runs<T>{std::span<const Index>(firsts).subspan(t * perToken, perToken), table.dim()};
  }, std::span<Value<T>>(out.values));
  return out;
}

template <class T>
Nodes<T> layerNorm(const LayerNorm<T>& norm, const Nodes<T>& x) {
  const std::size_t d = norm.dim();
  if (x.values.empty() || x.values.size() % d != 0) throw py::value_error("wrong number of inputs");
  const std::span<const Value<T>> in = x.live();
  Nodes<T> out{std::vector<Value<T>>(in.size())};
  const std::span<Value<T>> to(out.values);
  norm.forwardRows(in, to);
  return out;
}

template <class T>
Nodes<T> attend(CausalSelfAttention<T>& attention, const Nodes<T>& x, std::size_t window) {
  if (window == 0 || x.values.empty() || x.values.size() % (window * attention.dModel()) != 0)
    throw py::value_error("x: windows of `window` tokens of d_model values");
  Nodes<T> out{std::vector<Value<T>>(x.values.size())};
  attention.forward(x.live(), window, std::span<Value<T>>(out.values));
  return out;
}

// Transformer blocks one after the other (a GPT's stack of them), and the layer norm after the
// last where it has one (GPT-2's ln_f, nn.TransformerEncoder's norm), made in order, so that their
// parameters are consecutive nodes, block after block.
template <class T>
struct TransformerStack {
  std::vector<TransformerBlock<T>> blocks;
  std::optional<LayerNorm<T>> norm;

  NodeRange<T> parameters() const {
    const NodeRange<T> first = blocks.front().parameters(), last = norm ? norm->parameters() : blocks.back().parameters();
    return {first.first, last.first + last.count - first.first};
  }
};

// Blocks over windows of `window` tokens: one call for each block's seven steps, or for a whole
// stack's. Their intermediate handles go to one scratch per thread (as the pool is), shared by
// every block.
template <class T>
Nodes<T> transform(std::span<TransformerBlock<T>> blocks, const Nodes<T>& x, std::size_t window) {
  if (window == 0 || x.values.empty() || x.values.size() % (window * blocks.front().dModel()) != 0)
    throw py::value_error("x: windows of `window` tokens of d_model values");
  const std::span<const Value<T>> in = x.live();
  Nodes<T> out{std::vector<Value<T>>(in.begin(), in.end())};
  static thread_local typename TransformerBlock<T>::Scratch scratch BURTORCH_INITIAL_EXEC;
  for (TransformerBlock<T>& block : blocks) block.forward(std::span<Value<T>>(out.values), window, scratch);
  return out;
}

template <class T>
Nodes<T> transform(TransformerStack<T>& stack, const Nodes<T>& x, std::size_t window) {
  Nodes<T> out = transform<T>(std::span(stack.blocks), x, window);
  if (!stack.norm) return out;
  Nodes<T> normed{std::vector<Value<T>>(out.values.size())};
  stack.norm->forwardRows(out.values, std::span<Value<T>>(normed.values));
  return normed;
}

// Softmax cross-entropy of each row of logits against its target: targets of shape (rows,) give
// a loss per row (a node each, as the MLP's driver makes them); of shape (windows, tokens), the
// mean of each window's tokens' losses, as the GPT's driver makes them (crossEntropyMeans).
template <class T>
Nodes<T> crossEntropyRows(const Nodes<T>& logits, const Ids& targets) {
  const std::size_t rows = targets.size();
  if ((targets.ndim() != 1 && targets.ndim() != 2) || rows == 0 || logits.values.size() % rows != 0)
    throw py::value_error("targets: (rows,) or (windows, tokens), one per row of logits");
  const std::span<const Value<T>> all = logits.live();
  const std::size_t vocab = all.size() / rows, tokens = targets.ndim() == 2 ? targets.shape(1) : 1;
  checkIds(targets, vocab, "target");
  Nodes<T> out{std::vector<Value<T>>(rows / tokens)};
  if (targets.ndim() == 1) {
    for (std::size_t row = 0; row < rows; ++row)
      out.values[row] = crossEntropy(all.subspan(row * vocab, vocab), static_cast<std::size_t>(targets.data()[row]));
    return out;
  }
  const auto target = [&](std::size_t row) { return static_cast<std::size_t>(targets.data()[row]); };
  crossEntropyMeans<T>(all, vocab, tokens, target, std::span<Value<T>>(out.values));
  return out;
}

template <class T>
py::array_t<T> valuesOf(const Nodes<T>& nodes, bool grads) {
  const std::span<const Value<T>> all = nodes.live();
  py::array_t<T> out(all.size());
  for (std::size_t k = 0; k < all.size(); ++k) out.mutable_data()[k] = grads ? all[k].grad() : all[k].data();
  return out;
}

template <class T>
void bindBlocks(py::module_& m) {
  using V = Value<T>;
  py::class_<Nodes<T>>(m, "Nodes", "A block of nodes held in C++: what the layers take and return over many tokens at once.")
      .def(py::init([](const std::vector<V>& values) { return Nodes<T>{values}; }), py::arg("values"))
      .def("__len__", [](const Nodes<T>& x) { return x.values.size(); })
      .def("__getitem__", [](const Nodes<T>& x, std::size_t k) {
        if (k >= x.values.size()) throw py::index_error("no such node");
        return x.live()[k];
      })
      .def("__add__", &sum<T>, "Element by element, one block of nodes (a residual connection: add_block.hpp).")
      .def("tolist", [](const Nodes<T>& x) { const auto all = x.live(); return std::vector<V>(all.begin(), all.end()); })
      .def_property_readonly("data", [](const Nodes<T>& x) { return valuesOf(x, false); })
      .def_property_readonly("grad", [](const Nodes<T>& x) { return valuesOf(x, true); });
  m.def("cross_entropy", &crossEntropyRows<T>, py::arg("logits"), py::arg("targets"),
        "Over Nodes of rows of logits: targets (rows,) give a loss per row, (windows, tokens) each window's mean loss.");
}

}  // namespace burtorch::python

namespace pybind11::detail {

// Anything else numpy can make C-contiguous int64 of (a list, int32 ids) is converted first.
template <>
struct type_caster<burtorch::python::Ids> {
  PYBIND11_TYPE_CASTER(burtorch::python::Ids, const_name("numpy.ndarray[int64]"));

  bool load(handle src, bool convert) {
    constexpr int kReadable = npy_api::NPY_ARRAY_C_CONTIGUOUS_ | npy_api::NPY_ARRAY_ALIGNED_;
    if (isinstance<array>(src)) {
      auto given = reinterpret_borrow<array>(src);
      // The descriptor's fields read in place: dtype::of and equal() are two calls into numpy per array.
      const dtype type = given.dtype();
      if ((given.flags() & kReadable) == kReadable && type.normalized_num() == dtype::num_of<std::int64_t>() &&
          type.byteorder() == '=') {
        value.array = std::move(given);
        return true;
      }
    }
    if (!convert) return false;
    value.array = array_t<std::int64_t, array::c_style | array::forcecast>::ensure(src);
    return static_cast<bool>(value.array);
  }
};

}  // namespace pybind11::detail

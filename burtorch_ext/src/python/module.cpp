// `import burtorch`: the micrograd API over the C++ engine. burtorch.Value and the functions at
// the top level are FP64 (burtorch.fp64); burtorch.fp32 has the same names in FP32. Each Python
// Value is a handle to a node of this thread's pool, so everything made after a mark() is invalid
// after the matching rewind(); operations check that the nodes they are given still exist.
// Value itself is in value_type.hpp, the batch-level calls (Nodes) in blocks.hpp, Trainer and Gpt
// in training.hpp; the functions, the pool and the layers are bound here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "blocks.hpp"
#include "training.hpp"
#include "value_type.hpp"

namespace py = pybind11;
using namespace burtorch;

namespace {

// Attention, a transformer block and a stack of them split d_model among their heads.
void checkHeads(std::size_t dModel, std::size_t heads) {
  if (heads == 0 || dModel % heads != 0) throw py::value_error("d_model must be a multiple of heads");
}

template <class T>
Value<T> live(Value<T> v) {
  if (!v.valid()) throw py::index_error("this Value's node no longer exists (the pool was rewound below it)");
  return v;
}

template <class T>
const std::vector<Value<T>>& live(const std::vector<Value<T>>& values) {
  for (const Value<T>& v : values) live(v);
  return values;
}

template <class T>
std::vector<Value<T>> handles(NodeRange<T> range) {
  std::vector<Value<T>> out(range.size());
  for (std::size_t k = 0; k < range.size(); ++k) out[k] = range[k];
  return out;
}

[[noreturn]] void throwOSError(const std::string& message) {
  PyErr_SetString(PyExc_OSError, message.c_str());
  throw py::error_already_set();
}

Activation activationNamed(const std::string& name) {
  if (name == "identity") return Activation::Identity;
  if (name == "relu") return Activation::Relu;
  if (name == "tanh") return Activation::Tanh;
  if (name == "sigmoid") return Activation::Sigmoid;
  throw py::value_error("activation must be identity, relu, tanh or sigmoid; got '" + name + "'");
}

Part partNamed(const std::string& name) {
  if (name == "values") return Part::Values;
  if (name == "grads") return Part::Grads;
  if (name == "values_and_grads") return Part::ValuesAndGrads;
  throw py::value_error("part must be 'values', 'grads' or 'values_and_grads'; got '" + name + "'");
}

template <class T>
void bindValue(py::module_& m, const char* qualifiedName) {
  PyTypeObject* type = python::makeValueType<T>(qualifiedName);
  if (!type) throw py::error_already_set();
  m.attr("Value") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type));
}

template <class T>
void bindFunctions(py::module_& m) {
  using V = Value<T>;
  using Vs = std::vector<V>;
  m.def("relu", [](V x) { return relu(live(x)); });
  m.def("tanh", [](V x) { return burtorch::tanh(live(x)); });
  m.def("exp", [](V x) { return burtorch::exp(live(x)); });
  m.def("negative_log", [](V x) { return negativeLog(live(x)); });
  m.def("sigmoid", [](V x) { return sigmoid(live(x)); });
  m.def("inv", [](V x) { return inv(live(x)); });
  m.def("sqr", [](V x) { return sqr(live(x)); });
  m.def("pow3", [](V x) { return pow3(live(x)); });
  m.def("log", [](V x) { return burtorch::log(live(x)); });
  m.def("sqrt", [](V x) { return burtorch::sqrt(live(x)); });
  m.def("inv_sqrt", [](V x) { return invSqrt(live(x)); });
  m.def("mul_by_constant", [](V x, T c) { return mulByConstant(live(x), c); });
  m.def("add_constant", [](V x, T c) { return addConstant(live(x), c); });
  m.def("pow", [](V x, T c) { return burtorch::pow(live(x), c); }, "x ** c as one node (no special cases).");

  m.def("add", [](V x, V y) { return add(live(x), live(y)); });
  m.def("sub", [](V x, V y) { return sub(live(x), live(y)); });
  m.def("mul", [](V x, V y) { return mul(live(x), live(y)); });
  m.def("div", [](V x, V y) { return div(live(x), live(y)); });
  m.def("mean", [](V x, V y) { return mean(live(x), live(y)); });
  m.def("add_squares", [](V x, V y) { return addSquares(live(x), live(y)); });
  m.def("mean_squares", [](V x, V y) { return meanSquares(live(x), live(y)); });
  m.def("negative_mean", [](V x, V y) { return negativeMean(live(x), live(y)); });

  m.def("reduce_sum", [](const Vs& xs) { return reduceSum(live(xs)); });
  m.def("reduce_sub", [](const Vs& xs) { return reduceSub(live(xs)); });
  m.def("reduce_mul", [](const Vs& xs) { return reduceMul(live(xs)); });
  m.def("reduce_mean", [](const Vs& xs) { return reduceMean(live(xs)); });
  m.def("reduce_sum_of_squares", [](const Vs& xs) { return reduceSumOfSquares(live(xs)); });
  m.def("reduce_mean_squares", [](const Vs& xs) { return reduceMeanSquares(live(xs)); });
  m.def("reduce_negative_mean", [](const Vs& xs) { return reduceNegativeMean(live(xs)); });
  m.def("log_sum_exp", [](const Vs& xs) { return logSumExp(live(xs)); });
  m.def("variance_biased", [](const Vs& xs) { return varianceBiased(live(xs)); });
  m.def("variance", [](const Vs& xs) {
    if (xs.size() < 2) throw py::value_error("variance needs at least two values");
    return variance(live(xs));
  });
  m.def("reduce_mean_and_mean_squares", [](const Vs& xs) { return reduceMeanAndMeanSquares(live(xs)); });
  const auto sameLength = [](const Vs& x, const Vs& w) {
    if (x.size() != w.size()) throw py::value_error("inner product of lists of different lengths");
  };
  m.def("inner_product", [sameLength](const Vs& x, const Vs& w) {
    sameLength(x, w);
    return innerProduct(live(x), live(w));
  });
  m.def("inner_product_with_bias", [sameLength](const Vs& x, const Vs& w, V bias) {
    sameLength(x, w);
    return innerProductWithBias(live(x), live(w), live(bias));
  });
  m.def("softmax", [](const Vs& xs) {
    Vs out(xs.size());
    softmax(live(xs), std::span<V>(out));
    return out;
  });
  m.def("cross_entropy", [](const Vs& logits, std::size_t target) {
    if (target >= logits.size()) throw py::index_error("target is not an index of the logits");
    return crossEntropy(live(logits), target);
  }, py::arg("logits"), py::arg("target"));

  m.def("backward", [](V root) { backward(live(root)); });
  m.def("mark", [] { return Pool<T>::local().mark(); }, "The pool's current position, for rewind().");
  m.def("rewind", [](Mark mark) {
    Pool<T>& pool = Pool<T>::local();
    if (mark.nodes > pool.size() || mark.links > pool.linkCount()) throw py::value_error("the pool is already behind this mark");
    pool.rewind(mark);
  }, "Drops every node made since the mark; those made before (parameters) keep values and gradients.");
  m.def("pool_size", [] { return Pool<T>::local().size(); });
  m.def("reserve", [](std::size_t nodes, std::size_t links) { Pool<T>::local().reserve(nodes, links); },
        py::arg("nodes"), py::arg("links") = 0);
  m.def("sgd_step_and_zero_grad", [](V first, V last, T step) {
    if (live(last).index() < live(first).index()) throw py::value_error("last comes before first");
    sgdStepAndZeroGrad(NodeRange<T>{first.index(), last.index() - first.index() + 1}, step);
  }, py::arg("first"), py::arg("last"), py::arg("step"),
     "p <- p - step * dp, then dp <- 0, for the nodes first..last (a model's parameters, made one after the other).");
  m.def("zero_grad", [](V first, V last) {
    if (live(first).index() > live(last).index()) throw py::value_error("first comes after last");
    zeroGrad(first, last);
  }, "Zeroes the gradients of the nodes first..last, both included.");
  m.def("zero_grad", [](const Vs& values) {
    for (const V& v : live(values)) v.setGrad(T(0));
  });
  m.def("save", [](const std::string& path, V first, V last, const std::string& part) {
    if (live(first).index() > live(last).index()) throw py::value_error("first comes after last");
    if (!save(path.c_str(), first, last, partNamed(part))) throwOSError("cannot write " + path);
  }, py::arg("path"), py::arg("first"), py::arg("last"), py::arg("part") = "values",
        "Writes the nodes first..last as raw bytes: values, grads, or values then grads.");
  m.def("load", [](const std::string& path, V first, V last, const std::string& part) {
    if (live(first).index() > live(last).index()) throw py::value_error("first comes after last");
    if (!load(path.c_str(), first, last, partNamed(part))) throwOSError("cannot read " + path + " into these nodes (missing, or not exactly their size)");
  }, py::arg("path"), py::arg("first"), py::arg("last"), py::arg("part") = "values");
  m.def("to_dot", [](V root, const std::map<std::string, V>& labels) {
    std::vector<NodeLabel<T>> named;
    for (const auto& [name, v] : labels) named.push_back({live(v), name});
    return toDot(live(root), std::span<const NodeLabel<T>>(named));
  }, py::arg("root"), py::arg("labels") = std::map<std::string, V>{}, "Graphviz DOT of the graph the root reaches.");
}

template <class T>
void bindLayers(py::module_& m) {
  using V = Value<T>;
  using Vs = std::vector<V>;
  // Parameters come as numpy arrays of any shape (or lists), read as row-major buffers.
  using Buffer = py::array_t<T, py::array::c_style | py::array::forcecast>;
  const auto flat = [](const Buffer& v) { return std::span<const T>(v.data(), static_cast<std::size_t>(v.size())); };

  py::class_<Neuron<T>>(m, "Neuron")
      .def(py::init([](std::size_t inputs, bool bias, const std::string& activation, std::uint64_t seed) {
             Rng rng(seed);
             return Neuron<T>::create(inputs, bias, activationNamed(activation), rng);
           }),
           py::arg("inputs"), py::arg("bias") = true, py::arg("activation") = "identity", py::arg("seed") = 0)
      .def("__call__", [](const Neuron<T>& n, const Vs& x) {
        if (x.size() != n.weights.size()) throw py::value_error("wrong number of inputs");
        return n(live(x));
      })
      .def("parameters", [](const Neuron<T>& n) {
        Vs out = handles(n.weights);
        if (n.hasBias()) out.push_back(n.bias);
        return out;
      });

  py::class_<Linear<T>>(m, "Linear")
      .def(py::init([](std::size_t inputs, std::size_t outputs, bool bias, const std::string& activation, std::uint64_t seed) {
             Rng rng(seed);
             return Linear<T>(inputs, outputs, bias, activationNamed(activation), rng);
           }),
           py::arg("inputs"), py::arg("outputs"), py::arg("bias") = true, py::arg("activation") = "identity", py::arg("seed") = 0)
      .def("__call__", &python::linear<T>, py::arg("x"), "x: Nodes of tokens' inputs, one after the other; returns Nodes.")
      .def("__call__", [](const Linear<T>& layer, const Vs& x) {
        if (x.empty() || x.size() % layer.inputs() != 0) throw py::value_error("wrong number of inputs");
        Vs out(x.size() / layer.inputs() * layer.outputs());
        layer.forward(live(x), std::span<V>(out));
        return out;
      }, "x: one token's inputs, or several tokens' one after the other (a block: one matrix product);\n"
         "returns each token's outputs, one after the other.")
      .def("over_rows", &python::linearOverRows<T>, py::arg("table"), py::arg("ids"),
         "The layer over the table's rows that each token looks up, concatenated (ids[t]: token t's rows),\n"
         "read in place; returns each token's outputs (Nodes), one after the other.")
      .def("parameters", [](const Linear<T>& layer) { return handles(layer.parameters()); })
      .def_property_readonly("weights", [](const Linear<T>& layer) { return handles(layer.weights()); }, "Row-major [outputs][inputs].")
      .def_property_readonly("biases", [](const Linear<T>& layer) { return handles(layer.biases()); })
      .def("load", [flat](Linear<T>& layer, const Buffer& weight, const std::optional<Buffer>& bias) {
        if (!layer.load(flat(weight), bias ? flat(*bias) : std::span<const T>())) throw py::value_error("weight must have inputs*outputs values (row-major) and bias outputs values, or none without bias");
      }, py::arg("weight"), py::arg("bias") = py::none());

  py::class_<Embedding<T>>(m, "Embedding")
      .def(py::init([](std::size_t count, std::size_t dim, std::uint64_t seed) {
             Rng rng(seed);
             return Embedding<T>(count, dim, rng);
           }),
           py::arg("count"), py::arg("dim"), py::arg("seed") = 0)
      .def("rows", &python::rows<T>, py::arg("ids"), "The rows that ids (a numpy array of any shape) name, one after the other: Nodes.")
      .def("__getitem__", [](const Embedding<T>& table, std::size_t row) {
        if (row >= table.count()) throw py::index_error("no such row");
        return handles(table[row]);
      })
      .def("parameters", [](const Embedding<T>& table) { return handles(table.parameters()); })
      .def("load", [flat](Embedding<T>& table, const Buffer& values) {
        if (!table.load(flat(values))) throw py::value_error("the table needs count*dim values, row-major");
      });
  m.def("embed", &python::embed<T>, py::arg("tokens"), py::arg("positions"), py::arg("ids"),
        "ids (windows, tokens): each token's row of `tokens` plus the row of `positions` at its place in its\n"
        "window (GPT-2's wte[idx] + wpe[pos]), one after the other: Nodes.");

  py::class_<LayerNorm<T>>(m, "LayerNorm")
      .def(py::init<std::size_t, bool, T>(), py::arg("dim"), py::arg("affine") = true, py::arg("eps") = T(1e-5))
      .def("__call__", &python::layerNorm<T>, py::arg("x"), "x: Nodes of tokens' values; each token normalised.")
      .def("__call__", [](const LayerNorm<T>& norm, const Vs& x) {
        const std::size_t d = norm.dim();
        if (x.empty() || x.size() % d != 0) throw py::value_error("wrong number of inputs");
        const std::span<const V> in(live(x));  // every token's nodes checked once, not once per token
        Vs out(x.size());
        for (std::size_t t = 0; t < x.size() / d; ++t) norm.forward(in.subspan(t * d, d), std::span<V>(out).subspan(t * d, d));
        return out;
      }, "x: one token's values, or several tokens' one after the other, each normalised.")
      .def("parameters", [](const LayerNorm<T>& norm) { return handles(norm.parameters()); })
      .def_property_readonly("gamma", [](const LayerNorm<T>& norm) { return handles(norm.gamma()); })
      .def_property_readonly("beta", [](const LayerNorm<T>& norm) { return handles(norm.beta()); })
      .def("load", [flat](LayerNorm<T>& norm, const Buffer& gamma, const Buffer& beta) {
        if (!norm.load(flat(gamma), flat(beta))) throw py::value_error("gamma and beta need dim values each (affine layers only)");
      });

  py::class_<CausalSelfAttention<T>>(m, "CausalSelfAttention")
      .def(py::init([](std::size_t dModel, std::size_t heads, bool bias, std::uint64_t seed, std::optional<bool> projBias) {
             checkHeads(dModel, heads);
             Rng rng(seed);
             return CausalSelfAttention<T>(dModel, heads, bias, projBias.value_or(bias), rng);
           }),
           py::arg("d_model"), py::arg("heads"), py::arg("bias") = true, py::arg("seed") = 0, py::arg("proj_bias") = py::none(),
           "bias: of query, key and value (and of proj unless proj_bias says otherwise: GPT-2 style models have\n"
           "proj_bias=True, bias=False).")
      .def("__call__", &python::attend<T>, py::arg("x"), py::arg("window"), "x: Nodes of windows of `window` tokens.")
      .def("__call__", [](CausalSelfAttention<T>& attention, const Vs& x, std::size_t window) {
        const std::size_t d = attention.dModel();
        if (window == 0 || x.size() % (window * d) != 0) throw py::value_error("x: windows of `window` tokens of d_model values");
        Vs out(x.size());
        attention.forward(live(x), window, std::span<V>(out));
        return out;
      }, py::arg("x"), py::arg("window"),
         "x: windows of `window` tokens, one after the other, each token d_model values; a token attends\n"
         "within its window. Returns the outputs in the same layout.")
      .def("__call__", [](CausalSelfAttention<T>& attention, const std::vector<Vs>& tokens) {
        const std::size_t d = attention.dModel();
        Vs x;
        for (const Vs& token : tokens) {
          if (token.size() != d) throw py::value_error("every token needs d_model values");
          for (const V& v : token) x.push_back(live(v));
        }
        Vs out(x.size());
        attention.forward(x, tokens.size(), std::span<V>(out));
        std::vector<Vs> rows;
        for (std::size_t t = 0; t < tokens.size(); ++t) rows.emplace_back(out.begin() + t * d, out.begin() + (t + 1) * d);
        return rows;
      })
      .def("parameters", [](const CausalSelfAttention<T>& a) { return handles(a.parameters()); })
      .def_readonly("query", &CausalSelfAttention<T>::query)
      .def_readonly("key", &CausalSelfAttention<T>::key)
      .def_readonly("value", &CausalSelfAttention<T>::value)
      .def_readonly("proj", &CausalSelfAttention<T>::proj);

  py::class_<TransformerBlock<T>>(m, "TransformerBlock",
                                  "A pre-norm (GPT-2) block: x + proj(attention(ln1(x))), then x + ff2(relu(ff1(ln2(x)))); query, key\n"
                                  "and value without bias. One call for the seven steps (transformer_block.hpp).")
      .def(py::init([](std::size_t dModel, std::size_t heads, std::optional<std::size_t> ff, std::uint64_t seed) {
             checkHeads(dModel, heads);
             Rng rng(seed);
             return TransformerBlock<T>(dModel, heads, ff.value_or(4 * dModel), rng);
           }),
           py::arg("d_model"), py::arg("heads"), py::arg("ff") = py::none(), py::arg("seed") = 0,
           "ff: ff1's outputs (None: 4 * d_model). Its parameters are consecutive nodes in the order of its layers.")
      .def("__call__", [](TransformerBlock<T>& block, const python::Nodes<T>& x, std::size_t window) {
             return python::transform<T>(std::span(&block, 1), x, window);
           }, py::arg("x"), py::arg("window"),
           "x: Nodes of windows of `window` tokens of d_model values; returns the block's outputs (Nodes), same layout.")
      .def("parameters", [](const TransformerBlock<T>& block) { return handles(block.parameters()); })
      .def_readonly("ln1", &TransformerBlock<T>::ln1)
      .def_readonly("attention", &TransformerBlock<T>::attention)
      .def_readonly("ln2", &TransformerBlock<T>::ln2)
      .def_readonly("ff1", &TransformerBlock<T>::ff1)
      .def_readonly("ff2", &TransformerBlock<T>::ff2);

  py::class_<python::TransformerStack<T>>(m, "TransformerStack",
                                          "TransformerBlocks one after the other, then a layer norm where norm=True (GPT-2's ln_f, as\n"
                                          "nn.TransformerEncoder's norm), made in order (their parameters consecutive), run by one call.")
      .def(py::init([](std::size_t layers, std::size_t dModel, std::size_t heads, std::optional<std::size_t> ff, bool norm,
                       std::uint64_t seed) {
             if (layers == 0) throw py::value_error("layers must be positive");
             checkHeads(dModel, heads);
             Rng rng(seed);
             python::TransformerStack<T> stack;
             stack.blocks.reserve(layers);
             for (std::size_t l = 0; l < layers; ++l) stack.blocks.emplace_back(dModel, heads, ff.value_or(4 * dModel), rng);
             if (norm) stack.norm.emplace(dModel);
             return stack;
           }),
           py::arg("layers"), py::arg("d_model"), py::arg("heads"), py::arg("ff") = py::none(), py::arg("norm") = false,
           py::arg("seed") = 0)
      .def("__call__", [](python::TransformerStack<T>& stack, const python::Nodes<T>& x, std::size_t window) {
             return python::transform<T>(stack, x, window);
           }, py::arg("x"), py::arg("window"),
           "Every block in turn over x (as TransformerBlock's call), then the norm; returns the outputs (Nodes).")
      .def("__len__", [](const python::TransformerStack<T>& stack) { return stack.blocks.size(); })
      .def("__getitem__", [](python::TransformerStack<T>& stack, std::size_t l) -> TransformerBlock<T>& {
             if (l >= stack.blocks.size()) throw py::index_error("no such block");
             return stack.blocks[l];
           }, py::return_value_policy::reference_internal)
      .def_property_readonly("norm", [](python::TransformerStack<T>& stack) -> LayerNorm<T>* {
             return stack.norm ? &*stack.norm : nullptr;
           }, py::return_value_policy::reference_internal, "The layer norm after the last block (None without one).")
      .def("parameters", [](const python::TransformerStack<T>& stack) { return handles(stack.parameters()); });
}

template <class T>
void bindScalarType(py::module_& m, const char* valueName) {
  bindValue<T>(m, valueName);
  python::bindBlocks<T>(m);  // before the functions: cross_entropy's Nodes call first
  bindFunctions<T>(m);
  bindLayers<T>(m);
  python::bindTraining<T>(m);
}

}  // namespace

PYBIND11_MODULE(burtorch, m) {
  m.doc() = "BurTorch: scalar autodiff in C++ with the micrograd API (FP64 here, FP32 in burtorch.fp32).";
  m.attr("__version__") = BURTORCH_VERSION;
  py::class_<Mark>(m, "Mark", "A position in a pool, from mark(); pass it to rewind().")
      .def_readonly("nodes", &Mark::nodes)
      .def_readonly("links", &Mark::links)
      .def("__repr__", [](const Mark& mark) {
        return "Mark(nodes=" + std::to_string(mark.nodes) + ", links=" + std::to_string(mark.links) + ")";
      });
  m.def("build_info", [] {
    py::dict info;
    info["version"] = BURTORCH_VERSION;
    info["kernels"] = BURTORCH_KERNELS;
    info["gemm"] = kernels::describe(kernels::kernelChoice());
    info["isa"] = compiledIsa();
    info["compiler"] = compilerName();
    info["description"] = buildDescription();
    return info;
  }, "How this module was built, in the native driver's words: its --version says (description).");
  m.def("samples_per_graph", [](const std::string& model) -> std::optional<std::size_t> {
    if (model != "mlp" && model != "gpt") throw py::value_error("model must be mlp or gpt; got '" + model + "'");
    const std::size_t n = samplesPerGraph(model);
    return n == kWholeBatch ? std::nullopt : std::optional(n);
  }, py::arg("model"), "Samples of a batch per graph as the native driver trains `model` (mlp, gpt); None: the whole batch.");
  auto fp64 = m.def_submodule("fp64", "FP64 values (also at the top level of burtorch)");
  auto fp32 = m.def_submodule("fp32", "FP32 values");
  bindScalarType<double>(fp64, "burtorch.fp64.Value");
  bindScalarType<float>(fp32, "burtorch.fp32.Value");
  for (const auto& item : fp64.attr("__dict__").cast<py::dict>()) {
    const auto name = item.first.cast<std::string>();
    if (name.rfind("__", 0) != 0) m.attr(name.c_str()) = item.second;
  }
}

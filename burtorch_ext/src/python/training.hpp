// Training from Python as the native driver trains (burtorch/batch_step.hpp): the same graphs of
// samples, the same sweeps, the same bits. Trainer takes an SGD step over a batch whose graphs are
// built either by a Python function (any model written with the layers' calls) or, for a GPT, by
// Gpt in one call: the driver's own graph (burtorch/gpt_graph.hpp), so that a step crosses from
// Python into C++ once. A model of several layer calls crosses at each, and the interpreter's and
// pybind11's code around them are cold again every step (docs/engine.md measures what that costs).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <span>

#include "blocks.hpp"
#include "burtorch/burtorch.hpp"

namespace burtorch::python {

// A GPT of the module's layers: tokens' table, positions' table, a stack ending in its norm, the head.
template <class T>
class Gpt {
 public:
  Gpt(const Embedding<T>& wte, const Embedding<T>& wpe, TransformerStack<T>& stack, const Linear<T>& head)
      : wte_(wte), wpe_(wpe), stack_(stack), head_(head) {
    if (!stack.norm) throw py::value_error("the stack must end in its layer norm (TransformerStack(..., norm=True))");
    const std::size_t d = wte.dim();
    if (wpe.dim() != d || stack.blocks.front().dModel() != d || head.inputs() != d)
      throw py::value_error("wte, wpe, the stack and the head must have one d_model");
  }

  // Checked here, before any step, so that a step reads them unchecked.
  void check(const Ids& x, const Ids& y) const {
    checkWindows(x, wte_, wpe_, "token id");
    if (y.ndim() != 2 || y.shape(0) != x.shape(0) || y.shape(1) != x.shape(1))
      throw py::value_error("y: (windows, tokens), as x");
    checkIds(y, head_.outputs(), "target");
  }

  // The losses of windows first..first+count-1 of x against y.
  std::span<const Value<T>> losses(const Ids& x, const Ids& y, std::size_t first, std::size_t count) {
    const std::size_t tokens = x.shape(1);
    const std::int64_t* ids = x.data() + first * tokens;
    const std::int64_t* targets = y.data() + first * tokens;
    return graph_.losses({wte_, wpe_, stack_.blocks, *stack_.norm, head_}, count, tokens,
                         [ids](std::size_t k) { return static_cast<std::size_t>(ids[k]); },
                         [targets](std::size_t k) { return static_cast<std::size_t>(targets[k]); });
  }

 private:
  const Embedding<T>& wte_;
  const Embedding<T>& wpe_;
  TransformerStack<T>& stack_;
  const Linear<T>& head_;
  GptGraph<T> graph_;
};

// Windows of token ids and their targets, checked against a Gpt when made.
template <class T>
struct GptBatch {
  Gpt<T>* gpt;
  Ids x, y;

  std::size_t windows() const { return x.shape(0); }
  std::span<const Value<T>> operator()(std::size_t first, std::size_t count) const { return gpt->losses(x, y, first, count); }
};

template <class T>
class Trainer {
 public:
  Trainer(Value<T> first, Value<T> last, std::size_t batch, double learningRate, std::optional<std::size_t> samplesPerGraph)
      : step_(range(first, last, batch, samplesPerGraph), batch, learningRate, samplesPerGraph.value_or(kWholeBatch)) {}

  std::size_t samplesPerGraph() const noexcept { return step_.samplesPerGraph(); }

  // The GIL is released in each backward sweep, the bulk of a step.
  double step(const py::function& losses) {
    py::object held;  // the graph's losses, alive until its sweep is done
    return step_.template operator()<py::gil_scoped_release>([&](std::size_t first, std::size_t count) {
      held = losses(first, count);
      const auto* graph = py::isinstance<Nodes<T>>(held) ? &held.cast<const Nodes<T>&>() : nullptr;
      if (graph == nullptr || graph->values.size() != count)
        throw py::value_error("losses(first, count) must return a Nodes of count losses, one per sample");
      return graph->live();
    });
  }

  double stepGpt(const GptBatch<T>& batch) {
    if (batch.windows() != step_.batch()) throw py::value_error("the batch's windows are not the trainer's batch size");
    return step_.template operator()<py::gil_scoped_release>(batch);
  }

 private:
  static NodeRange<T> range(Value<T> first, Value<T> last, std::size_t batch, std::optional<std::size_t> samplesPerGraph) {
    const std::size_t size = Pool<T>::local().size();
    if (first.index() >= size || last.index() >= size) throw py::index_error("a parameter's node no longer exists");
    if (last.index() < first.index()) throw py::value_error("last comes before first");
    if (batch == 0 || samplesPerGraph == std::optional<std::size_t>(0))
      throw py::value_error("batch and samples_per_graph must be positive");
    return {first.index(), last.index() - first.index() + 1};
  }

  BatchStep<T> step_;
};

// After the layers: the signatures name them.
template <class T>
void bindTraining(py::module_& m) {
  using V = Value<T>;
  py::class_<GptBatch<T>>(m, "GptBatch", "Windows of token ids and their targets for a Gpt (Gpt.batch), to pass to Trainer.step.");
  py::class_<Gpt<T>>(m, "Gpt",
                     "A GPT of these layers whose graph is built in one call from Trainer.step (burtorch/gpt_graph.hpp, the\n"
                     "native driver's code): embed(wte, wpe, x), the stack, the head and cross_entropy, without returning to Python.")
      .def(py::init<const Embedding<T>&, const Embedding<T>&, TransformerStack<T>&, const Linear<T>&>(), py::arg("wte"),
           py::arg("wpe"), py::arg("stack"), py::arg("head"), py::keep_alive<1, 2>(), py::keep_alive<1, 3>(),
           py::keep_alive<1, 4>(), py::keep_alive<1, 5>(), "stack: a TransformerStack with its norm (norm=True).")
      .def("batch", [](Gpt<T>& gpt, Ids x, Ids y) {
             gpt.check(x, y);
             return GptBatch<T>{&gpt, std::move(x), std::move(y)};
           }, py::arg("x"), py::arg("y"), py::keep_alive<0, 1>(),
           "x: token ids (windows, tokens); y: the id that follows each. Checked here, once.");
  py::class_<Trainer<T>>(m, "Trainer",
                         "SGD steps over batches built as graphs of samples, as the native driver trains (batch_step.hpp).")
      .def(py::init<V, V, std::size_t, double, std::optional<std::size_t>>(), py::arg("first"), py::arg("last"),
           py::arg("batch"), py::arg("learning_rate"), py::arg("samples_per_graph") = py::none(),
           "first..last: the model's parameters, made one after the other; the pool is marked here, after them.\n"
           "samples_per_graph: None, the whole batch in one graph.")
      .def_property_readonly("samples_per_graph", &Trainer<T>::samplesPerGraph)
      .def("step", &Trainer<T>::stepGpt, py::arg("batch"), "batch: Gpt.batch(x, y); each graph built by its Gpt in one call, the step otherwise as with losses (below).")
      .def("step", &Trainer<T>::step, py::arg("losses"),
           "losses(first, count) builds the graph of the batch's samples first..first+count-1 and returns their\n"
           "losses (a Nodes). Sums each graph's gradients, steps p <- p - learning_rate * mean gradient, zeroes\n"
           "the gradients; returns the batch's mean loss before the update. Each layer may be called once per graph:\n"
           "the last graph's sweep steps a layer's weights where their gradients are complete (optim.hpp), so a\n"
           "layer called twice in one graph would be stepped before its earlier call's gradients are taken.");
}

}  // namespace burtorch::python

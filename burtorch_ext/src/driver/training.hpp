// SGD training of the MLP and the GPT. A batch of one is computed as the paper's BurTorch trains:
// the sample's graph is built, backpropagated into the parameters' gradients, and dropped (the
// pool is rewound to the mark after the parameters). A larger batch is built as graphs of up to
// Model::kSamplesPerGraph samples, each layer applied to all of a graph's tokens at once (a
// block: linear.hpp's matrix products); burtorch/batch_step.hpp takes the step, as the Python
// module's Trainer does. Memory then grows with the samples per graph (a block's activations),
// not with the batch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "cli.hpp"
#include "inputs.hpp"
#include "json_line.hpp"
#include "model_shapes.hpp"

namespace burtorch::driver {

template <class Model>
class Trainer {
 public:
  using T = typename Model::Scalar;
  using Shape = typename Model::Shape;

  // Makes the model's parameters the pool's first nodes: the pool must be empty.
  Trainer(const Shape& shape, std::size_t batch, double learningRate, std::size_t samplesPerGraph = Model::kSamplesPerGraph)
      : model_(reserved(shape, std::min(batch, samplesPerGraph))),
        step_(NodeRange<T>{0, static_cast<Index>(Pool<T>::local().size())}, batch, learningRate, samplesPerGraph),
        width_(shape.sampleWidth()) {}

  Model& model() noexcept { return model_; }
  NodeRange<T> parameters() const noexcept { return step_.parameters(); }

  // One SGD step on `rows` (batch samples, one after another); returns the batch's mean loss
  // before the update.
  double step(const std::uint8_t* rows) noexcept {
    return step_([&](std::size_t first, std::size_t count) { return model_.losses(rows + first * width_, count); });
  }

 private:
  // The pool sized for the parameters and one graph, then the parameters made.
  static Shape reserved(const Shape& shape, std::size_t samplesPerGraph) {
    Pool<T>& pool = Pool<T>::local();
    BURTORCH_ASSERT(pool.size() == 0 && samplesPerGraph > 0);
    pool.reserve(countValues(shape.tensors()) + shape.graphNodes() * samplesPerGraph + 1);
    return shape;
  }

  Model model_;
  BatchStep<T> step_;
  std::size_t width_;
};

// A training workload of the driver: the inputs folder the harness prepared (--inputs), the
// model and its trainer. prepare() reads the next step's batch outside the timed region, as
// the Python workers' prepare() does; a step whose batch was not prepared reads it itself.
template <class Model>
class TrainingWorkload {
 public:
  using T = typename Model::Scalar;
  static constexpr std::string_view kName = Model::kName;
  static constexpr std::string_view kPrecision = "fp32";
  static constexpr auto kDefaults = Model::kDefaults;
  // The losses of the first steps (warm-up included) are the outputs the harness checks.
  static constexpr std::size_t kCheckedSteps = 3;

  TrainingWorkload(std::span<const Param> params, const Options& options) {
    open(params, options);
  }

  // Empty when ready to run; else why not.
  const std::string& error() const noexcept { return error_; }

  void prepare() {
    if (!inputs_.readBatch(step_, rows_.data())) {
      std::fprintf(stderr, "burtorch-bench: error: cannot read the batch of step %lld from the inputs\n", static_cast<long long>(step_));
      std::exit(1);
    }
    prepared_ = true;
  }

  void operator()() {
    if (!prepared_) prepare();
    const double loss = trainer_->step(rows_.data());
    if (losses_.size() < kCheckedSteps) losses_.push_back(loss);
    prepared_ = false;
    ++step_;
  }

  std::vector<Param> outputs() const {
    static constexpr std::string_view kNames[kCheckedSteps] = {"loss_0", "loss_1", "loss_2"};
    std::vector<Param> out;
    for (std::size_t k = 0; k < losses_.size(); ++k) out.push_back({kNames[k], losses_[k]});
    return out;
  }

  void extras(JsonLine& json) const { json.field("param_count", static_cast<std::int64_t>(inputs_.paramCount())); }

 private:
  void open(std::span<const Param> params, const Options& options) {
    if (options.inputs.empty()) {
      error_ = std::string(kName) + " needs --inputs DIR, the folder its prepare() wrote (workloads/inputs.py)";
      return;
    }
    if (!inputs_.open(options.inputs, kName, error_)) return;
    for (const Param& p : params) {
      if (std::isnan(p.value)) continue;
      const auto given = inputs_.config().integer(p.name);
      if (!given || static_cast<double>(*given) != p.value) {
        error_ = "--param " + std::string(p.name) + " differs from the inputs' config.txt";
        return;
      }
    }
    if (options.warmup + options.iterations > inputs_.steps()) {
      error_ = "the inputs hold " + std::to_string(inputs_.steps()) + " steps, fewer than warm-up + iterations";
      return;
    }
    const auto shape = Model::Shape::from(inputs_.config(), error_);
    if (!shape) return;
    const auto tensors = shape->tensors();
    if (inputs_.config().text("params") != formatTensors(tensors) || countValues(tensors) != inputs_.paramCount()) {
      error_ = "config.txt: the parameter tensors are not the model's " + formatTensors(tensors);
      return;
    }
    if (inputs_.sampleWidth() != shape->sampleWidth()) {
      error_ = "samples.bin: rows are not " + std::to_string(shape->sampleWidth()) + " tokens wide";
      return;
    }
    if (Pool<T>::local().size() != 0) {
      error_ = "the node pool must be empty before the model is made";
      return;
    }
    const auto batch = static_cast<std::size_t>(inputs_.batch());
    trainer_.emplace(*shape, batch, inputs_.learningRate());
    if (!inputs_.readParams(Pool<T>::local().values())) {
      error_ = "params.bin: read failed";
      return;
    }
    rows_.resize(batch * shape->sampleWidth());
    losses_.reserve(kCheckedSteps);
  }

  std::string error_;
  TrainingInputs inputs_;
  std::optional<Trainer<Model>> trainer_;
  std::vector<std::uint8_t> rows_;  // the current step's samples
  std::vector<double> losses_;
  std::int64_t step_ = 0;
  bool prepared_ = false;
};

}  // namespace burtorch::driver

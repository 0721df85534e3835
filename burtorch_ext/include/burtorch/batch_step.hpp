// One SGD step over a batch, as the native driver and the Python module both train: the batch is
// built as graphs of up to samplesPerGraph samples, each graph's losses summed into one root,
// backpropagated into the parameters' gradients and dropped (the pool rewound to the mark after
// the parameters) before the next. Then every parameter takes the step
//   p <- p - learning_rate * (sum of the samples' gradients) / batch,
// the gradient of the batch's mean loss; the weights of layers computed as blocks, and of every
// layer of a batch of one sample, take it in the last graph's backward sweep (optim.hpp's
// SgdInBackward), the rest after it. Graphs of fewer
// samples sum the gradients in another order: FP32 results then differ in the last digits, so
// whoever builds the same model must split a batch alike to get the same bits (samplesPerGraph).
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>
#include <string_view>

#include "burtorch/backward.hpp"
#include "burtorch/optim.hpp"
#include "burtorch/reductions.hpp"

namespace burtorch {

// Samples of a batch per graph, per model (the driver's Mlp and Gpt, engines/burtorch_models.py).
// The MLP: a batch is one graph, as every further graph reads w1 again. Measured at b = 64,
// e = 1024 on the reference VM (20 steps, 3 alternating rounds, medians): one graph 6.9 ms a step
// at 25.0 MiB peak resident, graphs of 32 / 16 samples 8.3 / 8.9 ms at 24.0 / 23.3 MiB.
// The GPT: graphs of at most 8 windows (64 token rows per block): measured at b = 64 on the
// reference VM (20 steps, 7 alternating rounds, medians), graphs of 4 / 8 / 16 / 64 windows took
// 10.9 / 10.2 / 10.4 / 10.8 ms a step at 4.9 / 6.4 / 9.4 / 27.1 MiB peak resident.
inline constexpr std::size_t kWholeBatch = std::numeric_limits<std::size_t>::max();
constexpr std::size_t samplesPerGraph(std::string_view model) noexcept { return model == "gpt" ? 8 : kWholeBatch; }

// Holds nothing around the backward sweeps; the Python module passes one that releases the GIL.
struct HoldNothing {};

template <class T>
class BatchStep {
 public:
  // params: every parameter, the pool's nodes just before its current end (the mark taken here).
  BatchStep(NodeRange<T> params, std::size_t batch, double learningRate, std::size_t samplesPerGraph) noexcept
      : pool_(Pool<T>::local()),
        params_(params),
        batch_(batch),
        samplesPerGraph_(std::min(batch, samplesPerGraph)),
        step_(static_cast<T>(learningRate / static_cast<double>(batch))),
        mark_(pool_.mark()) {
    BURTORCH_ASSERT(batch_ > 0 && samplesPerGraph_ > 0);
  }

  NodeRange<T> parameters() const noexcept { return params_; }
  std::size_t batch() const noexcept { return batch_; }
  std::size_t samplesPerGraph() const noexcept { return samplesPerGraph_; }

  // losses(first, count): builds the graph of the batch's samples first..first+count-1 and
  // returns their losses (a span of Values). Returns the batch's mean loss before the update.
  // A function of its own, not inlined into a caller's loop: inlined into the driver's timed loop,
  // the GPT's b = 1 step took 99.8 µs, out of line 96.8 (the same bits; 9 alternating rounds of 40
  // steps on core 1; b = 8 and 64 and the MLP's points within 1%).
  template <class Guard = HoldNothing, class Losses>
  BURTORCH_OUTLINE double operator()(Losses&& losses) {
    double total = 0;
    SgdInBackward<T>& sgd = SgdInBackward<T>::local();
    for (std::size_t first = 0; first < batch_; first += samplesPerGraph_) {
      pool_.rewind(mark_);
      const std::span<const Value<T>> graph = losses(first, std::min(samplesPerGraph_, batch_ - first));
      for (const Value<T>& loss : graph) total += loss.data();
      const bool last = first + samplesPerGraph_ >= batch_;
      // The last graph's sweep finishes the weights' gradients, layer by layer: it steps them.
      // The models share no weight between layers (SgdInBackward's promise), and the last step
      // left every gradient zero.
      if (last) sgd.open(step_, first == 0);
      // A graph of one sample backpropagates from its loss itself, as the paper's graph has no sum node.
      const Value<T> root = graph.size() == 1 ? graph[0] : reduceSum(graph);
      [[maybe_unused]] Guard held;
      backwardWithScratch(root, scratch_);
      if (last) {
        pool_.rewind(mark_);
        sgd.stepRest(params_, step_);
      }
    }
    return total / static_cast<double>(batch_);
  }

 private:
  Pool<T>& pool_;
  NodeRange<T> params_;
  std::size_t batch_, samplesPerGraph_;
  T step_;  // learning rate / batch
  Mark mark_;
  BackwardScratch scratch_;
};

}  // namespace burtorch

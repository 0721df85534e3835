// makemore's character-level MLP (workloads/mlp.py), for each (context, target) sample:
//
//   x      = the context's embedding rows, concatenated     context x embedding values
//   h      = tanh(w1 x + b1)                                hidden units
//   logits = w2 h + b2                                      vocab, a linear head
//   loss   = logSumExp(logits) - logits[target]             softmax cross-entropy
//
// The parameters are the pool's first nodes in the inputs' order (wte, w1, b1, w2, b2), every
// weight matrix (out, in) row-major, so params.bin is loaded with one read. The concatenated
// embedding rows are a list of runs over the table, not copies, and each hidden unit's inner
// product runs over contiguous values and gradients. The samples of a batch go through each
// layer together (a block of rows, linear.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "cli.hpp"
#include "model_shapes.hpp"

namespace burtorch::driver {

struct MlpShape {
  std::size_t context = 16, embedding = 64, vocab = 27, hidden = 4;

  static std::optional<MlpShape> from(const Config& config, std::string& error) {
    MlpShape s;
    const bool ok = readSizes(config, {{"context", &s.context}, {"embedding", &s.embedding}, {"vocab", &s.vocab},
                                       {"hidden_dim", &s.hidden}}, error);
    return ok ? std::optional(s) : std::nullopt;
  }

  std::vector<Tensor> tensors() const {
    return {{"wte", {vocab, embedding}}, {"w1", {hidden, context * embedding}}, {"b1", {hidden}},
            {"w2", {vocab, hidden}}, {"b2", {vocab}}};
  }
  // A sample: the context's token ids, then the target's.
  std::size_t sampleWidth() const { return context + 1; }
  // Nodes of one sample's graph: one per hidden unit (its tanh inside), the logits, the
  // log-sum-exp and the loss.
  std::size_t graphNodes() const { return hidden + vocab + 2; }
};

template <class T>
class Mlp {
 public:
  using Scalar = T;
  using Shape = MlpShape;
  static constexpr std::string_view kName = "mlp";
  static constexpr std::size_t kSamplesPerGraph = samplesPerGraph(kName);  // batch_step.hpp
  // NaN: as the inputs say.
  static constexpr std::array<Param, 2> kDefaults{
      {{"hidden_dim", std::numeric_limits<double>::quiet_NaN()}, {"batch", std::numeric_limits<double>::quiet_NaN()}}};

  // Parameters zero, to be loaded.
  explicit Mlp(const Shape& shape)
      : shape_(shape),
        wte_(shape.vocab, shape.embedding),
        hidden_(shape.context * shape.embedding, shape.hidden, true, Activation::Tanh),
        out_(shape.hidden, shape.vocab, true, Activation::Identity) {}

  // Builds the graphs of `count` samples (one after the other in `samples`), the layers over
  // all of them at once; returns each sample's loss.
  std::span<const Value<T>> losses(const std::uint8_t* samples, std::size_t count) {
    const std::size_t width = shape_.sampleWidth();
    fit(count);
    for (std::size_t s = 0; s < count; ++s)
      for (std::size_t c = 0; c < shape_.context; ++c) rows_[s * shape_.context + c] = wte_[samples[s * width + c]].first;
    const auto context = [&](std::size_t s) {
      return Runs<T>{std::span<const Index>(rows_).subspan(s * shape_.context, shape_.context), shape_.embedding};
    };
    hidden_.forwardEach(count, context, span(h_, count * shape_.hidden));
    out_.forward(span(h_, count * shape_.hidden), span(logits_, count * shape_.vocab));
    for (std::size_t s = 0; s < count; ++s)
      losses_[s] = crossEntropy(span(logits_, count * shape_.vocab).subspan(s * shape_.vocab, shape_.vocab), samples[s * width + shape_.context]);
    return span(losses_, count);
  }

 private:
  static std::span<Value<T>> span(std::vector<Value<T>>& values, std::size_t count) { return std::span<Value<T>>(values).first(count); }

  // Buffers for `count` samples: grown on the first step of a batch size, then reused.
  void fit(std::size_t count) {
    if (losses_.size() >= count) return;
    rows_.resize(count * shape_.context);
    h_.resize(count * shape_.hidden);
    logits_.resize(count * shape_.vocab);
    losses_.resize(count);
  }

  Shape shape_;
  Embedding<T> wte_;
  Linear<T> hidden_, out_;
  std::vector<Index> rows_;  // the first node of each context token's embedding row
  std::vector<Value<T>> h_, logits_, losses_;
};

}  // namespace burtorch::driver

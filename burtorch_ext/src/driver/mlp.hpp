// makemore's character-level MLP (workloads/mlp.py), one (context, target) sample at a time:
//
//   x      = the context's embedding rows, concatenated     context x embedding values
//   h      = tanh(w1 x + b1)                                hidden units
//   logits = w2 h + b2                                      vocab, a linear head
//   loss   = logSumExp(logits) - logits[target]             softmax cross-entropy
//
// The parameters are the pool's first nodes in the inputs' order (wte, w1, b1, w2, b2), every
// weight matrix (out, in) row-major, so params.bin is loaded with one read. The concatenated
// embedding rows are a list of runs over the table, not copies, and each hidden unit's inner
// product runs over contiguous values and gradients.
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
  // NaN: as the inputs say.
  static constexpr std::array<Param, 2> kDefaults{
      {{"hidden_dim", std::numeric_limits<double>::quiet_NaN()}, {"batch", std::numeric_limits<double>::quiet_NaN()}}};

  // Parameters zero, to be loaded.
  explicit Mlp(const Shape& shape)
      : shape_(shape),
        wte_(shape.vocab, shape.embedding),
        hidden_(shape.context * shape.embedding, shape.hidden, true, Activation::Tanh),
        out_(shape.hidden, shape.vocab, true, Activation::Identity),
        rows_(shape.context),
        h_(shape.hidden),
        logits_(shape.vocab) {}

  // Builds one sample's graph; returns its loss.
  Value<T> loss(const std::uint8_t* sample) {
    for (std::size_t c = 0; c < shape_.context; ++c) rows_[c] = wte_[sample[c]].first;
    hidden_.forward(Runs<T>{rows_, shape_.embedding}, std::span<Value<T>>(h_));
    out_.forward(h_, std::span<Value<T>>(logits_));
    return crossEntropy(logits_, sample[shape_.context]);
  }

 private:
  Shape shape_;
  Embedding<T> wte_;
  Linear<T> hidden_, out_;
  std::vector<Index> rows_;  // the first node of each context token's embedding row
  std::vector<Value<T>> h_, logits_;
};

}  // namespace burtorch::driver

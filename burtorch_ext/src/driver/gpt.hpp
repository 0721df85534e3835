// The character-level mini-GPT (workloads/gpt.py) over windows of block_size + 1 tokens: the
// first block_size its inputs, each of them followed by its target; its graph: burtorch/gpt_graph.hpp.
// Query, key and value have no bias; proj, ff1, ff2 and head do. LayerNorm: biased variance,
// eps 1e-5. The parameters are the pool's first nodes in the inputs' order (wte, wpe, per block
// ln1, wq, wk, wv, proj, ln2, ff1, ff2, then ln_f and head), each weight matrix (out, in)
// row-major. Attention heads are views of the query, key and value handles.
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

struct GptShape {
  std::size_t layers = 6, heads = 6, blockSize = 8, dModel = 24, vocab = 65;

  static std::optional<GptShape> from(const Config& config, std::string& error) {
    GptShape s;
    if (!readSizes(config, {{"layers", &s.layers}, {"heads", &s.heads}, {"block_size", &s.blockSize},
                            {"d_model", &s.dModel}, {"vocab", &s.vocab}}, error))
      return std::nullopt;
    if (s.dModel % s.heads != 0) {
      error = "config.txt: d_model is not a multiple of heads";
      return std::nullopt;
    }
    return s;
  }

  std::size_t ff() const { return 4 * dModel; }

  std::vector<Tensor> tensors() const {
    const std::size_t d = dModel;
    std::vector<Tensor> out{{"wte", {vocab, d}}, {"wpe", {blockSize, d}}};
    for (std::size_t l = 0; l < layers; ++l) {
      std::string h = "h";
      h += std::to_string(l);
      h += '.';
      for (Tensor t : std::initializer_list<Tensor>{
               {"ln1_g", {d}}, {"ln1_b", {d}}, {"wq", {d, d}}, {"wk", {d, d}}, {"wv", {d, d}},
               {"proj_w", {d, d}}, {"proj_b", {d}}, {"ln2_g", {d}}, {"ln2_b", {d}}, {"ff1_w", {ff(), d}},
               {"ff1_b", {ff()}}, {"ff2_w", {d, ff()}}, {"ff2_b", {d}}}) {
        t.name = h + t.name;
        out.push_back(std::move(t));
      }
    }
    out.push_back({"lnf_g", {d}});
    out.push_back({"lnf_b", {d}});
    out.push_back({"head_w", {vocab, d}});
    out.push_back({"head_b", {vocab}});
    return out;
  }

  // A sample: block_size + 1 consecutive token ids; inputs are the first block_size, targets the last.
  std::size_t sampleWidth() const { return blockSize + 1; }

  // Nodes of one sample's graph. Per token: the embedding sum (d); per block and token, two
  // layer norms (d each), query, key and value (3d), the heads' outputs (d), proj (d), two
  // residual sums (2d), ff1 (ff, its relu inside) and ff2 (d); at the end a layer norm and the
  // logits per token, and the loss.
  std::size_t graphNodes() const {
    const std::size_t t = blockSize, d = dModel;
    const std::size_t block = t * (2 * d + 3 * d + d + d + 2 * d + ff() + d);
    return t * d + layers * block + t * (d + vocab) + 1;
  }
};

template <class T>
class Gpt {
 public:
  using Scalar = T;
  using Shape = GptShape;
  static constexpr std::string_view kName = "gpt";
  static constexpr std::size_t kSamplesPerGraph = samplesPerGraph(kName);  // batch_step.hpp
  // NaN: as the inputs say.
  static constexpr std::array<Param, 1> kDefaults{{{"batch", std::numeric_limits<double>::quiet_NaN()}}};

  // Parameters zero (layer norms: gain 1, bias 0), to be loaded.
  explicit Gpt(const Shape& shape)
      : shape_(shape),
        wte_(shape.vocab, shape.dModel),
        wpe_(shape.blockSize, shape.dModel),
        blocks_(makeBlocks(shape)),
        lnf_(shape.dModel),
        head_(shape.dModel, shape.vocab, true, Activation::Identity) {}

  // Builds the graphs of `count` windows (one after the other in `windows`); returns each
  // window's loss (burtorch/gpt_graph.hpp).
  template <class StageClock = NoStageClock>
  std::span<const Value<T>> losses(const std::uint8_t* windows, std::size_t count, StageClock stageDone = {}) {
    const std::size_t tokens = shape_.blockSize, width = shape_.sampleWidth();
    return graph_.losses({wte_, wpe_, blocks_, lnf_, head_}, count, tokens,
                         [&](std::size_t k) { return windows[k / tokens * width + k % tokens]; },
                         [&](std::size_t k) { return windows[k / tokens * width + k % tokens + 1]; }, stageDone);
  }

 private:
  // The blocks' parameters in the inputs' order: each block's layers in their declaration order.
  static std::vector<TransformerBlock<T>> makeBlocks(const Shape& s) {
    std::vector<TransformerBlock<T>> blocks;
    blocks.reserve(s.layers);
    for (std::size_t l = 0; l < s.layers; ++l) blocks.emplace_back(s.dModel, s.heads, s.ff());
    return blocks;
  }

  Shape shape_;
  Embedding<T> wte_, wpe_;
  std::vector<TransformerBlock<T>> blocks_;
  LayerNorm<T> lnf_;
  Linear<T> head_;
  GptGraph<T> graph_;
};

}  // namespace burtorch::driver

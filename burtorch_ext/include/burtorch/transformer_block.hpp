// A pre-norm transformer block (GPT-2's) over windows of tokens, its residual stream updated in place:
//   x = x + proj(attention(ln1(x)));  x = x + ff2(relu(ff1(ln2(x))))
// Query, key and value have no bias; proj, ff1 and ff2 do. Its layers are made in that order, so
// its parameters are consecutive nodes: ln1, query, key, value, proj, ln2, ff1, ff2. One call runs
// the seven steps, so that a caller (the driver's GPT, a Python model) crosses into it once a
// block, not once a layer.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "burtorch/add_block.hpp"
#include "burtorch/attention.hpp"
#include "burtorch/layer_norm.hpp"
#include "burtorch/linear.hpp"

namespace burtorch {

// The steps of a block's forward, in order; a stage clock is told each one as it ends.
enum class BlockStage { Ln1, Attention, Residual, Ln2, Ff1, Ff2, FfResidual };

template <class T>
struct TransformerBlock {
  // Handles of a block's intermediate outputs: grown to the largest graph seen, then reused, and
  // shared by every block of a model (each block's are consumed before the next one runs).
  struct Scratch {
    std::vector<Value<T>> normed, y, hidden;

    void fit(std::size_t tokens, std::size_t dModel, std::size_t ff) {
      if (normed.size() >= tokens * dModel && hidden.size() >= tokens * ff) return;
      normed.resize(tokens * dModel);
      y.resize(tokens * dModel);
      hidden.resize(tokens * ff);
    }
  };

  LayerNorm<T> ln1;
  CausalSelfAttention<T> attention;
  LayerNorm<T> ln2;
  Linear<T> ff1, ff2;

  // Parameters zero (layer norms: gain 1, bias 0), to be loaded.
  TransformerBlock(std::size_t dModel, std::size_t heads, std::size_t ff) noexcept
      : ln1(dModel), attention(dModel, heads, false, true), ln2(dModel),
        ff1(dModel, ff, true, Activation::Relu), ff2(ff, dModel, true, Activation::Identity) {}

  // Weights and biases drawn from uniform(-1, 1) (layer norms: gain 1, bias 0).
  TransformerBlock(std::size_t dModel, std::size_t heads, std::size_t ff, Rng& rng) noexcept
      : ln1(dModel), attention(dModel, heads, false, true, rng), ln2(dModel),
        ff1(dModel, ff, true, Activation::Relu, rng), ff2(ff, dModel, true, Activation::Identity, rng) {}

  std::size_t dModel() const noexcept { return attention.dModel(); }
  std::size_t ff() const noexcept { return ff1.outputs(); }
  NodeRange<T> parameters() const noexcept {
    const NodeRange<T> last = ff2.parameters();
    return {ln1.parameters().first, last.first + last.count - ln1.parameters().first};
  }

  // x: windows of `window` tokens, each dModel handles, row-major; rebound to the block's outputs.
  template <class StageClock>
  void forward(std::span<Value<T>> x, std::size_t window, Scratch& scratch, StageClock stageDone) {
    const std::size_t tokens = x.size() / dModel();
    scratch.fit(tokens, dModel(), ff());
    const auto normed = std::span<Value<T>>(scratch.normed).first(x.size());
    const auto y = std::span<Value<T>>(scratch.y).first(x.size());
    const auto hidden = std::span<Value<T>>(scratch.hidden).first(tokens * ff());
    ln1.forwardRows(x, normed);
    stageDone(BlockStage::Ln1);
    attention.forward(normed, window, y);
    stageDone(BlockStage::Attention);
    addBlock(x, y, x);  // the residual connection
    stageDone(BlockStage::Residual);
    ln2.forwardRows(x, normed);
    stageDone(BlockStage::Ln2);
    ff1.forward(normed, hidden);
    stageDone(BlockStage::Ff1);
    ff2.forward(hidden, y);
    stageDone(BlockStage::Ff2);
    addBlock(x, y, x);  // the residual connection
    stageDone(BlockStage::FfResidual);
  }

  void forward(std::span<Value<T>> x, std::size_t window, Scratch& scratch) {
    forward(x, window, scratch, [](BlockStage) {});
  }
};

}  // namespace burtorch

// A GPT's graph over windows of tokens (GPT-2's shape; the paper's mini-GPT):
//
//   x = wte[tokens] + wpe[positions]
//   for each block:  x = x + proj(attention(ln1(x)));  x = x + ff2(relu(ff1(ln2(x))))  (transformer_block.hpp)
//   logits = head(ln_f(x));  loss = mean over positions of cross-entropy(logits, next token)
//
// every layer over all of the windows' tokens at once (attention within each window). The native
// driver's GPT and the Python module's (burtorch.Gpt) build their graphs with this one code, so
// that their losses are equal to the bit.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "burtorch/embedding.hpp"
#include "burtorch/layer_norm.hpp"
#include "burtorch/linear.hpp"
#include "burtorch/loss.hpp"
#include "burtorch/transformer_block.hpp"

namespace burtorch {

// The stages of a GPT graph's forward, in order; a stage clock is told each one as it ends
// (bench/gpt_stages.cpp times them).
enum class GptStage { Embedding, Ln1, Attention, Residual, Ln2, Ff1, Ff2, LnF, Head, CrossEntropy, Count };

struct NoStageClock {
  void operator()(GptStage) const noexcept {}
};

template <class T>
struct GptLayers {
  const Embedding<T>& wte;
  const Embedding<T>& wpe;
  std::span<TransformerBlock<T>> blocks;
  const LayerNorm<T>& lnf;
  const Linear<T>& head;
};

// The handles between the layers: grown on a graph's first size, then reused, so that a step
// allocates nothing.
template <class T>
class GptGraph {
 public:
  // The graphs of `count` windows of `tokens` tokens: tokenOf(k) is the id of token k (window
  // k / tokens), targetOf(k) the id that follows it. Returns each window's loss.
  template <class TokenOf, class TargetOf, class StageClock = NoStageClock>
  std::span<const Value<T>> losses(const GptLayers<T>& m, std::size_t count, std::size_t tokens, TokenOf tokenOf,
                                   TargetOf targetOf, StageClock stageDone = {}) {
    const std::size_t all = count * tokens, d = m.wte.dim(), vocab = m.head.outputs();
    fit(count, all, d, m.blocks.empty() ? 0 : m.blocks.front().ff(), vocab);
    const auto x = span(x_, all * d);
    embeddingSum(m.wte, m.wpe, tokens, tokenOf, span(tokenRows_, all * d), span(positionRows_, all * d), x);
    stageDone(GptStage::Embedding);
    for (TransformerBlock<T>& block : m.blocks)
      block.forward(x, tokens, scratch_, [&](BlockStage stage) { stageDone(stageOf(stage)); });
    const auto normed = span(scratch_.normed, all * d);
    m.lnf.forwardRows(x, normed);
    stageDone(GptStage::LnF);
    const auto logits = span(logits_, all * vocab);
    m.head.forward(normed, logits);
    stageDone(GptStage::Head);
    crossEntropyMeans<T>(logits, vocab, tokens, targetOf, span(losses_, count));
    stageDone(GptStage::CrossEntropy);
    return span(losses_, count);
  }

 private:
  static GptStage stageOf(BlockStage stage) {
    switch (stage) {
      case BlockStage::Ln1: return GptStage::Ln1;
      case BlockStage::Attention: return GptStage::Attention;
      case BlockStage::Ln2: return GptStage::Ln2;
      case BlockStage::Ff1: return GptStage::Ff1;
      case BlockStage::Ff2: return GptStage::Ff2;
      default: return GptStage::Residual;
    }
  }

  static std::span<Value<T>> span(std::vector<Value<T>>& values, std::size_t count) { return std::span<Value<T>>(values).first(count); }

  void fit(std::size_t count, std::size_t all, std::size_t d, std::size_t ff, std::size_t vocab) {
    if (losses_.size() >= count && x_.size() >= all * d) return;
    x_.resize(all * d);
    scratch_.fit(all, d, ff);
    logits_.resize(all * vocab);
    tokenRows_.resize(all * d);
    positionRows_.resize(all * d);
    losses_.resize(count);
  }

  typename TransformerBlock<T>::Scratch scratch_;  // the blocks' intermediate handles; ln_f's output too
  std::vector<Value<T>> x_, logits_, losses_;
  std::vector<Value<T>> tokenRows_, positionRows_;  // each token's row of wte and of wpe, as handles
};

}  // namespace burtorch

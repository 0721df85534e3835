// Layers over a block of many tokens (b samples x tokens, linear.hpp's matrix products) and the
// batch as one graph (training.hpp): their gradients against finite differences, and against
// the token-by-token, sample-by-sample path.
//
// Where the summation order is the same (b = 1: the block is not used) the bits are the same.
// Elsewhere the block's sums run in another order, and two orders of a k-term FP32 sum differ by
// about sqrt(k) 2^-24 of the sum of the terms' magnitudes. For the GPT (k <= 96) each loss is
// within 1e-6 relative of the per-sample path, and each gradient within 2e-6 of the largest
// gradient of its tensor (a bound per element would fail where a gradient nearly cancels):
// measured 6e-7 with FMA, 1.05e-6 with SSE2's separate multiply and add. The MLP's hidden layer
// sums k = 1024 terms of uniform(-1, 1) weights, and a loss is a difference of nearly equal
// terms (log-sum-exp minus a logit): measured up to 3.2e-6, checked at 1e-5.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"
#include "gpt.hpp"
#include "gradcheck.hpp"
#include "mlp.hpp"
#include "random_inputs.hpp"
#include "training.hpp"

using namespace burtorch;
using namespace burtorch::driver;
using random_inputs::randomize;
using random_inputs::sampleRows;
using burtorch::detail::kBlockTokens;

namespace {

// The batch's graph: the sum of the samples' losses, as Trainer::step backpropagates it.
template <class Model>
Value<typename Model::Scalar> batchLoss(Model& model, const std::vector<std::uint8_t>& rows, std::size_t count) {
  return reduceSum(model.losses(rows.data(), count));
}

// Gradients and losses of a batch as one graph, and sample by sample.
struct BothPaths {
  std::vector<float> blockGrads, sampleGrads, blockLosses, sampleLosses;
};

template <class Model>
BothPaths bothPaths(const typename Model::Shape& shape, std::size_t batch, std::uint64_t seed) {
  Pool<float>& pool = Pool<float>::local();
  pool.rewind(Mark{});
  Trainer<Model> trainer(shape, batch, 0.1);
  const NodeRange<float> params = trainer.parameters();
  randomize(params, seed);
  const std::vector<std::uint8_t> rows = sampleRows(batch, shape.sampleWidth(), shape.vocab, seed + 1);
  const Mark mark = pool.mark();
  BothPaths out;
  for (const Value<float>& loss : trainer.model().losses(rows.data(), batch)) out.blockLosses.push_back(loss.data());
  backward(batchLoss(trainer.model(), rows, batch));
  for (std::size_t k = 0; k < params.size(); ++k) out.blockGrads.push_back(params[k].grad());
  zeroGrad(params);
  for (std::size_t s = 0; s < batch; ++s) {
    pool.rewind(mark);
    const Value<float> loss = trainer.model().losses(rows.data() + s * shape.sampleWidth(), 1)[0];
    out.sampleLosses.push_back(loss.data());
    backward(loss);
  }
  for (std::size_t k = 0; k < params.size(); ++k) out.sampleGrads.push_back(params[k].grad());
  pool.rewind(Mark{});
  return out;
}

// Each gradient of each tensor within `tolerance` of the largest of that tensor's gradients.
bool gradientsAgree(const std::vector<float>& got, const std::vector<float>& want, const std::vector<Tensor>& tensors, float tolerance) {
  std::size_t first = 0;
  bool ok = true;
  for (const Tensor& t : tensors) {
    std::size_t n = 1;
    for (const std::size_t d : t.dims) n *= d;
    float largest = 0;
    for (std::size_t k = first; k < first + n; ++k) largest = std::max(largest, std::abs(want[k]));
    for (std::size_t k = first; k < first + n; ++k) ok = ok && std::abs(got[k] - want[k]) <= tolerance * largest;
    first += n;
  }
  return ok;
}

bool lossesAgree(const std::vector<float>& got, const std::vector<float>& want, double tolerance) {
  bool ok = got.size() == want.size();
  for (std::size_t k = 0; ok && k < got.size(); ++k) ok = check::close(got[k], want[k], tolerance);
  return ok;
}

}  // namespace

TEST_CASE("blocks: a layer over many tokens, inputs in runs: gradients against finite differences, dX over the runs tokens share or token by token") {
  using burtorch::detail::kDistinctRunsRows;
  constexpr std::size_t kTokens = kBlockTokens + 3;
  // Token t reads rows (stride k + 1) mod tableRows of the table, k = 2t, 2t + 1.
  const auto expectGradients = [&](const char* what, std::size_t tableRows, std::size_t stride, std::size_t layerRows, std::uint64_t seed) {
    auto& pool = Pool<double>::local();
    pool.rewind(Mark{});
    Rng rng(seed);
    const Embedding<double> table(tableRows, 3, rng);
    const Linear<double> layer(6, layerRows, true, Activation::Tanh, rng);
    const Linear<double> head(layerRows, 2, false, Activation::Identity, rng);
    const NodeRange<double> nodes{0, static_cast<Index>(pool.size())};
    std::vector<Index> rows(2 * kTokens);
    for (std::size_t k = 0; k < rows.size(); ++k) rows[k] = table[(stride * k + 1) % tableRows].first;
    std::vector<Value<double>> h(kTokens * layerRows), y(kTokens * 2);
    EXPECT_NODE_GRADIENTS(what, nodes, [&] {
      layer.forwardEach(kTokens, [&](std::size_t t) { return Runs<double>{std::span<const Index>(rows).subspan(2 * t, 2), 3}; },
                        std::span<Value<double>>(h));
      head.forward(h, std::span<Value<double>>(y));
      return reduceSumOfSquares(y);
    });
    pool.rewind(Mark{});
  };
  expectGradients("layer block, rows shared by tokens", 5, 3, 7, 21);
  expectGradients("dX over the shared runs", 4, 5, kDistinctRunsRows, 23);
  expectGradients("dX token by token, a run per token", 2 * kTokens, 5, kDistinctRunsRows, 23);
}

TEST_CASE("blocks: MLP and GPT batches as one graph: every parameter's gradient against finite differences (FP64)") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  {
    const MlpShape shape{3, 2, 5, 4};
    Trainer<Mlp<double>> trainer(shape, kBlockTokens, 0.1);
    randomize(trainer.parameters(), 5);
    const std::vector<std::uint8_t> rows = sampleRows(kBlockTokens, shape.sampleWidth(), shape.vocab, 6);
    EXPECT_NODE_GRADIENTS("mlp batch", trainer.parameters(), [&] { return batchLoss(trainer.model(), rows, kBlockTokens); });
  }
  pool.rewind(Mark{});
  {
    const GptShape shape{2, 2, 3, 4, 7};
    constexpr std::size_t kBatch = (kBlockTokens + 2) / 3;  // enough windows of 3 tokens for a block
    Trainer<Gpt<double>> trainer(shape, kBatch, 0.1);
    randomize(trainer.parameters(), 7);
    const std::vector<std::uint8_t> rows = sampleRows(kBatch, shape.sampleWidth(), shape.vocab, 8);
    EXPECT_NODE_GRADIENTS("gpt batch", trainer.parameters(), [&] { return batchLoss(trainer.model(), rows, kBatch); });
  }
  pool.rewind(Mark{});
}

TEST_CASE("blocks: a batch as one graph gives the samples' losses and summed gradients (FP32)") {
  MlpShape mlp;
  mlp.hidden = 32;
  const BothPaths m = bothPaths<Mlp<float>>(mlp, 64, 31);
  CHECK(lossesAgree(m.blockLosses, m.sampleLosses, 1e-5));
  CHECK(gradientsAgree(m.blockGrads, m.sampleGrads, mlp.tensors(), 1e-5f));
  const GptShape gpt{2, 3, 8, 12, 11};
  const BothPaths g = bothPaths<Gpt<float>>(gpt, 8, 33);
  CHECK(lossesAgree(g.blockLosses, g.sampleLosses, 1e-6));
  CHECK(gradientsAgree(g.blockGrads, g.sampleGrads, gpt.tensors(), 2e-6f));
}

TEST_CASE("blocks: a batch of one is built as before, with the same bits") {
  // One sample's graph is the graph of a batch of one.
  const GptShape gpt;
  const BothPaths g = bothPaths<Gpt<float>>(gpt, 1, 41);
  CHECK(g.blockLosses == g.sampleLosses && g.blockGrads == g.sampleGrads);
}

namespace {

// The parameters after trainer.step(), and after the same graphs' sweeps followed by one SGD
// pass over every parameter: the step the sweep takes for the blocks' weights must not change a bit.
template <class Model>
bool sweepStepsAsAPassWould(const typename Model::Shape& shape, std::size_t batch, std::size_t samplesPerGraph, std::uint64_t seed) {
  Pool<float>& pool = Pool<float>::local();
  pool.rewind(Mark{});
  constexpr double kRate = 0.5;
  Trainer<Model> trainer(shape, batch, kRate, samplesPerGraph);
  const NodeRange<float> params = trainer.parameters();
  randomize(params, seed);
  std::vector<float> initial;
  for (std::size_t k = 0; k < params.size(); ++k) initial.push_back(params[k].data());
  const std::vector<std::uint8_t> rows = sampleRows(batch, shape.sampleWidth(), shape.vocab, seed + 1);
  const Mark mark = pool.mark();
  for (std::size_t first = 0; first < batch; first += samplesPerGraph) {
    pool.rewind(mark);
    const auto losses = trainer.model().losses(rows.data() + first * shape.sampleWidth(), std::min(samplesPerGraph, batch - first));
    backward(losses.size() == 1 ? losses[0] : reduceSum(losses));
  }
  pool.rewind(mark);
  sgdStepAndZeroGrad(params, static_cast<float>(kRate / static_cast<double>(batch)));
  std::vector<float> expected;
  for (std::size_t k = 0; k < params.size(); ++k) {
    expected.push_back(params[k].data());
    params[k].setData(initial[k]);
  }
  trainer.step(rows.data());
  bool same = true;
  for (std::size_t k = 0; k < params.size(); ++k) same = same && params[k].data() == expected[k] && params[k].grad() == 0.0f;
  pool.rewind(Mark{});
  return same;
}

}  // namespace

TEST_CASE("blocks: the SGD step the last graph's sweep takes for the blocks' weights has the bits of a pass after it") {
  MlpShape mlp;
  mlp.hidden = 72;  // w1: 72 x 1024, above kSweepStepWeights
  CHECK(mlp.hidden * mlp.context * mlp.embedding >= burtorch::detail::kSweepStepWeights);
  CHECK(sweepStepsAsAPassWould<Mlp<float>>(mlp, 64, 64, 51));
  CHECK(sweepStepsAsAPassWould<Mlp<float>>(mlp, 64, 16, 52));  // four graphs, the last steps
  const GptShape gpt{2, 3, 8, 12, 11};
  CHECK(sweepStepsAsAPassWould<Gpt<float>>(gpt, 24, 8, 53));  // layers too small: all after the sweep
  CHECK(sweepStepsAsAPassWould<Gpt<float>>(gpt, 1, 8, 54));   // a window of 8 tokens: every layer in it
  CHECK(sweepStepsAsAPassWould<Gpt<float>>(gpt, 1, 1, 55));   // no block
}

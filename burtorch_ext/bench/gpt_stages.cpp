// burtorch-gpt-stages: where the time of a GPT training step goes, stage by stage. Each step
// is BatchStep's (burtorch/batch_step.hpp) with the clock read between the forward's stages
// (Gpt::losses tells it each one) and, in the backward sweep, wherever the kind of node changes:
// a fused block is one call, and the scalar nodes of one kind lie in runs, so the clock is read
// a few hundred times a graph, not once a node.
//   burtorch-gpt-stages [--batch B] [--steps N]   (default 64 and 30, after 3 warm-up steps)
// The model has the workload's shape (workloads/catalog/gpt.py), uniform(-1, 1) parameters and
// random windows: the same work as the harness's run, without its inputs folder. Prints each
// stage's median and best time per step over the steps, the forward's and the sweep's, and the
// step timed without the clocks.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "gpt.hpp"
#include "training.hpp"

using namespace burtorch;
using namespace burtorch::driver;

namespace {

using Clock = std::chrono::steady_clock;

// The backward's kinds of node, by what computes their gradients.
enum class Sweep { Products, LayerNorm, Attention, Sums, CrossEntropy, Other, Count };

constexpr std::array<std::string_view, static_cast<std::size_t>(GptStage::Count)> kForwardNames{
    "embedding sum", "ln1", "attention (its 4 products in)", "residual sums", "ln2", "ff1", "ff2", "ln_f", "head", "cross-entropy"};
constexpr std::array<std::string_view, static_cast<std::size_t>(Sweep::Count)> kSweepNames{
    "products (every layer)", "layer norm", "attention", "residual and embedding sums", "cross-entropy", "root, skipped nodes"};

Sweep kindOf(Op op) {
  switch (op) {
    case Op::LinearRow: return Sweep::Products;
    case Op::LayerNormRow: return Sweep::LayerNorm;
    case Op::AttentionRow: return Sweep::Attention;
    case Op::AddBlock: return Sweep::Sums;
    case Op::CrossEntropyBlock: return Sweep::CrossEntropy;
    default: return Sweep::Other;
  }
}

struct StepTimes {
  std::array<double, static_cast<std::size_t>(GptStage::Count)> forward{};
  std::array<double, static_cast<std::size_t>(Sweep::Count)> sweep{};
  double update = 0;
};

double since(Clock::time_point& mark) {
  const Clock::time_point now = Clock::now();
  const double s = std::chrono::duration<double>(now - mark).count();
  mark = now;
  return s;
}

// backwardWithScratch (backward.hpp), the clock read where the kind of the reached node changes.
void timedBackward(Value<float> root, BackwardScratch& scratch, StepTimes& times) {
  Pool<float>& pool = Pool<float>::local();
  const Index r = root.index();
  const auto floor = static_cast<Index>(pool.leadingLeaves());
  detail::Sweep<float> s{pool.grads(), pool.values(), pool.links(), scratch.fit(pool.capacity(), floor), r, floor};
  s.g[r] = 1;
  s.reached[r] = true;
  Sweep current = Sweep::Other;
  Clock::time_point mark = Clock::now();
  for (Index i = r;; --i) {
    if (s.reached[i]) {
      s.reached[i] = false;
      const Sweep kind = kindOf(pool.ops()[i]);
      if (kind != current) {
        times.sweep[static_cast<std::size_t>(current)] += since(mark);
        current = kind;
      }
      detail::propagate(s, pool.ops()[i], i, pool.args()[i], s.g[i]);
    }
    if ((i == s.low) | (i == floor)) break;
  }
  times.sweep[static_cast<std::size_t>(current)] += since(mark);
  scratch.leftFlags(s.low, floor);
}

// One step as BatchStep takes it, timed stage by stage.
StepTimes timedStep(Gpt<float>& model, NodeRange<float> params, const std::uint8_t* rows, std::size_t batch, float step,
                    BackwardScratch& scratch) {
  StepTimes times;
  Pool<float>& pool = Pool<float>::local();
  const Mark mark = pool.mark();
  SgdInBackward<float>& sgd = SgdInBackward<float>::local();
  const std::size_t perGraph = std::min(batch, Gpt<float>::kSamplesPerGraph), width = GptShape{}.sampleWidth();
  for (std::size_t first = 0; first < batch; first += perGraph) {
    pool.rewind(mark);
    Clock::time_point at = Clock::now();
    const auto losses = model.losses(rows + first * width, std::min(perGraph, batch - first),
                                     [&](GptStage stage) { times.forward[static_cast<std::size_t>(stage)] += since(at); });
    const bool last = first + perGraph >= batch;
    if (last) sgd.open(step, first == 0);
    timedBackward(losses.size() == 1 ? losses[0] : reduceSum(losses), scratch, times);
    if (last) {
      pool.rewind(mark);
      at = Clock::now();
      sgd.stepRest(params, step);
      times.update += since(at);
    }
  }
  return times;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs.size() % 2 ? xs[xs.size() / 2] : (xs[xs.size() / 2 - 1] + xs[xs.size() / 2]) / 2;
}

int usage() {
  std::fputs("usage: burtorch-gpt-stages [--batch B] [--steps N]\n", stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t batch = 64, steps = 30;
  for (int k = 1; k < argc; k += 2) {
    if (k + 1 >= argc) return usage();
    const std::string_view flag = argv[k];
    const long value = std::strtol(argv[k + 1], nullptr, 10);
    if (value <= 0) return usage();
    if (flag == "--batch") batch = static_cast<std::size_t>(value);
    else if (flag == "--steps") steps = static_cast<std::size_t>(value);
    else return usage();
  }
  constexpr std::size_t kWarmup = 3;
  constexpr double kRate = 0.01;
  const GptShape shape;
  Trainer<Gpt<float>> trainer(shape, batch, kRate);
  const NodeRange<float> params = trainer.parameters();
  Rng rng(1);
  for (std::size_t k = 0; k < params.size(); ++k) params[k].setData(rng.uniform<float>(-1, 1));
  std::vector<std::uint8_t> rows(batch * shape.sampleWidth());
  for (std::uint8_t& id : rows) id = static_cast<std::uint8_t>(rng.next() % shape.vocab);

  std::vector<double> plain;
  for (std::size_t k = 0; k < kWarmup + steps; ++k) {
    const Clock::time_point start = Clock::now();
    trainer.step(rows.data());
    if (k >= kWarmup) plain.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  BackwardScratch scratch;
  const auto step = static_cast<float>(kRate / static_cast<double>(batch));
  std::vector<StepTimes> timed;
  for (std::size_t k = 0; k < kWarmup + steps; ++k) {
    const StepTimes t = timedStep(trainer.model(), params, rows.data(), batch, step, scratch);
    if (k >= kWarmup) timed.push_back(t);
  }

  const auto print = [&](std::string_view what, std::string_view name, auto pick) {
    std::vector<double> xs;
    for (const StepTimes& t : timed) xs.push_back(pick(t));
    std::printf("  %-8.*s %-32.*s %9.1f %9.1f\n", static_cast<int>(what.size()), what.data(), static_cast<int>(name.size()), name.data(),
                median(xs) * 1e6, *std::min_element(xs.begin(), xs.end()) * 1e6);
  };
  std::printf("GPT b = %zu, %zu steps after %zu warm-up, us per step:      median      best\n", batch, steps, kWarmup);
  for (std::size_t s = 0; s < kForwardNames.size(); ++s) print("forward", kForwardNames[s], [&](const StepTimes& t) { return t.forward[s]; });
  for (std::size_t s = 0; s < kSweepNames.size(); ++s) print("backward", kSweepNames[s], [&](const StepTimes& t) { return t.sweep[s]; });
  print("update", "the rest of the parameters", [](const StepTimes& t) { return t.update; });
  const auto total = [](const auto& times) {
    double sum = 0;
    for (const double x : times) sum += x;
    return sum;
  };
  print("forward", "all its stages", [&](const StepTimes& t) { return total(t.forward); });
  print("backward", "the whole sweep", [&](const StepTimes& t) { return total(t.sweep); });
  std::printf("  the step without clocks: median %.1f us, best %.1f us\n", median(plain) * 1e6, *std::min_element(plain.begin(), plain.end()) * 1e6);
  return 0;
}

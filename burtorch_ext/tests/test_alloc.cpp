// A steady-state training step allocates nothing: every global operator new of this test
// binary is counted, and 1,000 rewound steps must leave the count unchanged.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"
#include "gpt.hpp"
#include "mlp.hpp"
#include "scalar_graphs.hpp"
#include "training.hpp"

#if defined(_WIN32)
#include <malloc.h>
#endif

namespace {
std::size_t allocations = 0;

// Every allocation is aligned, so one release function serves all the deletes.
void* allocate(std::size_t size, std::size_t align = alignof(std::max_align_t)) {
  ++allocations;
  align = std::max(align, alignof(std::max_align_t));
  const std::size_t rounded = std::max<std::size_t>(1, (size + align - 1) / align) * align;
#if defined(_WIN32)
  void* p = _aligned_malloc(rounded, align);
#else
  void* p = std::aligned_alloc(align, rounded);
#endif
  if (!p) std::abort();
  return p;
}

void release(void* p) noexcept {
#if defined(_WIN32)
  _aligned_free(p);
#else
  std::free(p);
#endif
}
}  // namespace

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t align) { return allocate(size, static_cast<std::size_t>(align)); }
void* operator new[](std::size_t size, std::align_val_t align) { return allocate(size, static_cast<std::size_t>(align)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }

using namespace burtorch;
using V = Value<double>;

namespace {

// Runs `step` a few times to let buffers reach their size, then counts over 1,000 steps.
template <class Step>
std::size_t allocationsInSteadyState(Step step) {
  for (int k = 0; k < 3; ++k) step();
  const std::size_t before = allocations;
  for (int k = 0; k < 1000; ++k) step();
  return allocations - before;
}

}  // namespace

TEST_CASE("the allocation counter sees allocations") {
  const std::size_t counted = allocationsInSteadyState([] { std::vector<double> v(3); (void)v; });
  CHECK(counted == 1000);
}

TEST_CASE("no allocation in steady state: tiny and small graphs, as the driver runs them") {
  Pool<double>::local().rewind(Mark{});
  const std::array<driver::Param, 2> tinyParams{{{"a", -41.0}, {"b", 2.0}}};
  driver::ScalarGraphWorkload<driver::TinyGraph> tiny(tinyParams);
  CHECK(allocationsInSteadyState([&] { tiny(); }) == 0);
  CHECK(tiny.outputs()[1].value == -35.0);
  const std::array<driver::Param, 2> smallParams{{{"a", -4.0}, {"b", 2.0}}};
  driver::ScalarGraphWorkload<driver::SmallGraph> small(smallParams);
  CHECK(allocationsInSteadyState([&] { small(); }) == 0);
}

TEST_CASE("no allocation in steady state: backward() with its own scratch") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const Mark mark = pool.mark();
  CHECK(allocationsInSteadyState([&] {
    pool.rewind(mark);
    const V a(-4.0), b(2.0);
    backward(driver::SmallGraph::build(a, b));
  }) == 0);
}

TEST_CASE("no allocation in steady state: an MLP SGD step") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  Rng rng(7);
  Embedding<double> embedding(27, 4, rng);
  const Linear<double> hidden(8, 16, true, Activation::Relu, rng);
  const Linear<double> out(16, 27, true, Activation::Identity, rng);
  const NodeRange<double> params{0, static_cast<Index>(pool.size())};
  const Mark mark = pool.mark();
  BackwardScratch scratch;
  std::vector<V> x(8), h(16), logits(27);
  std::size_t step = 0;
  CHECK(allocationsInSteadyState([&] {
    pool.rewind(mark);
    zeroGrad(params);
    for (std::size_t k = 0; k < 2; ++k)
      for (std::size_t j = 0; j < 4; ++j) x[k * 4 + j] = embedding[(step + k) % 27][j];
    hidden.forward(x, std::span<V>(h));
    out.forward(h, std::span<V>(logits));
    const V loss = crossEntropy(logits, step % 27);
    backwardWithScratch(loss, scratch);
    for (std::size_t k = 0; k < params.size(); ++k) params[k].setData(params[k].data() - 0.01 * params[k].grad());
    ++step;
  }) == 0);
}

TEST_CASE("no allocation in steady state: attention block with layer norm") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  Rng rng(9);
  CausalSelfAttention<double> attention(6, 3, true, rng);
  const LayerNorm<double> norm(6);
  const NodeRange<double> input = leaves<double>(4 * 6, 0.25);
  const Mark mark = pool.mark();
  BackwardScratch scratch;
  std::vector<V> x(24), normed(24), y(24);
  for (std::size_t k = 0; k < 24; ++k) x[k] = input[k];
  CHECK(allocationsInSteadyState([&] {
    pool.rewind(mark);
    for (std::size_t t = 0; t < 4; ++t)
      norm.forward(std::span<const V>(x).subspan(t * 6, 6), std::span<V>(normed).subspan(t * 6, 6));
    attention.forward(normed, 4, std::span<V>(y));
    backwardWithScratch(reduceSumOfSquares(y), scratch);
  }) == 0);
}

namespace {

// Steps of a trainer over fixed rows, from parameters drawn here.
template <class Model>
std::size_t trainingAllocations(const typename Model::Shape& shape, std::size_t batch) {
  Pool<float>::local().rewind(Mark{});
  driver::Trainer<Model> trainer(shape, batch, 0.01);
  Rng rng(11);
  const NodeRange<float> params = trainer.parameters();
  for (std::size_t k = 0; k < params.size(); ++k) params[k].setData(rng.uniform<float>(-1, 1));
  std::vector<std::uint8_t> rows(batch * shape.sampleWidth());
  for (std::size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<std::uint8_t>((7 * k + 3) % shape.vocab);
  const std::size_t counted = allocationsInSteadyState([&] { trainer.step(rows.data()); });
  Pool<float>::local().rewind(Mark{});
  return counted;
}

}  // namespace

TEST_CASE("no allocation in steady state: MLP and GPT training steps, as the driver runs them") {
  CHECK(trainingAllocations<driver::Mlp<float>>(driver::MlpShape{16, 8, 27, 12}, 4) == 0);
  CHECK(trainingAllocations<driver::Gpt<float>>(driver::GptShape{2, 3, 5, 6, 11}, 2) == 0);
  // Batches whose layers are blocks (linear.hpp's matrix products).
  CHECK(trainingAllocations<driver::Mlp<float>>(driver::MlpShape{16, 8, 27, 12}, 64) == 0);
  CHECK(trainingAllocations<driver::Gpt<float>>(driver::GptShape{2, 3, 5, 6, 11}, 8) == 0);
  // A batch trained as several graphs, the last with fewer samples.
  CHECK(trainingAllocations<driver::Gpt<float>>(driver::GptShape{2, 3, 5, 6, 11}, 2 * driver::Gpt<float>::kSamplesPerGraph + 3) == 0);
}

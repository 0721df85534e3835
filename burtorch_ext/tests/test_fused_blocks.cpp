// The fused blocks that replace a node per element: sums of two lists (add_block.hpp) and the
// cross-entropies of rows of logits (loss.hpp). Their gradients against finite differences
// (FP64), and against the nodes they replace: the sums with the same bits, the cross-entropies
// within FP32 rounding (another e^x, another order of the sums).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"
#include "gradcheck.hpp"

using namespace burtorch;

namespace {

// Operator nodes over the leaves (x * 1.5), one after the other: a run the sweep visits.
template <class T>
std::vector<Value<T>> scaled(std::span<const Value<T>> x) {
  std::vector<Value<T>> out;
  for (const Value<T>& v : x) out.push_back(v * T(1.5));
  return out;
}

// sum_k c_k y_k over the chosen outputs, with distinct c_k, so that each matters differently.
template <class T>
Value<T> weightedSum(std::span<const Value<T>> y, const std::vector<std::size_t>& chosen) {
  Value<T> total = y[chosen[0]] * T(0.3);
  for (std::size_t k = 1; k < chosen.size(); ++k) total = total + y[chosen[k]] * static_cast<T>(0.3 + 0.17 * static_cast<double>(k));
  return total;
}

std::vector<std::size_t> all(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t k = 0; k < n; ++k) out[k] = k;
  return out;
}

template <class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

std::vector<double> inputs(std::size_t n, double phase) {
  std::vector<double> x(n);
  for (std::size_t k = 0; k < n; ++k) x[k] = std::sin(phase + 2.3 * static_cast<double>(k)) * 2.0;
  return x;
}

// The block of sums over 10 outputs: x a run, y one of three lists (another run, the same run,
// or listed with repeats, as tokens share an embedding row), the root over `chosen` outputs.
enum class Second { Run, Same, Repeats };

template <class T>
std::vector<Value<T>> sums(std::span<const Value<T>> x0, Second second, bool asBlock) {
  const std::vector<Value<T>> base = scaled(x0);
  const std::span<const Value<T>> x = std::span<const Value<T>>(base).first(10);
  std::vector<Value<T>> y(base.begin() + 10, base.begin() + 20);
  if (second == Second::Same) y.assign(x.begin(), x.end());
  if (second == Second::Repeats)
    for (std::size_t k = 0; k < 10; ++k) y[k] = base[(3 * k) % 7];
  std::vector<Value<T>> out(10);
  if (asBlock) addBlock(x, y, std::span<Value<T>>(out));
  else for (std::size_t k = 0; k < 10; ++k) out[k] = x[k] + y[k];
  return out;
}

// The values and every node's gradient of the sums as a block or as Add nodes.
template <class T>
std::vector<T> sumsAndGradients(Second second, const std::vector<std::size_t>& chosen, bool asBlock) {
  auto& pool = Pool<T>::local();
  pool.rewind(Mark{});
  const NodeRange<T> x = leaves<T>(20);
  for (std::size_t k = 0; k < 20; ++k) x[k].setData(static_cast<T>(inputs(20, 0.4)[k]));
  std::vector<Value<T>> leafHandles;
  for (std::size_t k = 0; k < 20; ++k) leafHandles.push_back(x[k]);
  const std::vector<Value<T>> out = sums<T>(leafHandles, second, asBlock);
  backward(weightedSum<T>(out, chosen));
  std::vector<T> got;
  for (const Value<T>& v : out) got.push_back(v.data());
  for (Index k = 0; k < 20; ++k) got.push_back(Value<T>::fromIndex(k).grad());
  pool.rewind(Mark{});
  return got;
}

}  // namespace

TEST_CASE("add block: gradients against finite differences (FP64), runs, one run twice, listed with repeats, some outputs unreached") {
  for (const Second second : {Second::Run, Second::Same, Second::Repeats})
    for (const std::vector<std::size_t>& chosen : {all(10), std::vector<std::size_t>{9}, std::vector<std::size_t>{0, 4, 5}}) {
      const std::string what = "add block, operands " + std::to_string(static_cast<int>(second)) + ", " + std::to_string(chosen.size()) + " reached";
      EXPECT_GRADIENTS(what.c_str(), inputs(20, 0.4), [&](std::span<const Value<double>> x) {
        return weightedSum<double>(sums<double>(x, second, true), chosen);
      });
    }
}

TEST_CASE("add block: the values and gradients of one Add node per element, bit for bit (FP32)") {
  for (const Second second : {Second::Run, Second::Same, Second::Repeats})
    for (const std::vector<std::size_t>& chosen : {all(10), std::vector<std::size_t>{9}, std::vector<std::size_t>{0, 4, 5}})
      CHECK(sameBits(sumsAndGradients<float>(second, chosen, true), sumsAndGradients<float>(second, chosen, false)));
}

TEST_CASE("add block: one record, its outputs consecutive nodes, and the DOT export's edges") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> x = leaves<double>(6);
  std::vector<Value<double>> a{x[0], x[1], x[2]}, out(3);
  addBlock(a, std::vector<Value<double>>{x[5], x[3], x[5]}, std::span<Value<double>>(out));
  CHECK(out[1].index() == out[0].index() + 1 && out[2].index() == out[0].index() + 2);
  CHECK(out[0].op() == Op::AddBlock && pool.args()[out[0].index()].a == pool.args()[out[2].index()].a);
  const std::string dot = toDot(out[2]);
  CHECK(dot.find("addBlock") != std::string::npos);
  CHECK(dot.find("n2 -> n" + std::to_string(out[2].index())) != std::string::npos);
  CHECK(dot.find("n5 -> n" + std::to_string(out[2].index())) != std::string::npos);
  pool.rewind(Mark{});
}

namespace {

constexpr std::size_t kVocab = 7, kRowsPerLoss = 3, kLosses = 2;
constexpr std::size_t kTargets[kLosses * kRowsPerLoss] = {2, 0, 6, 6, 3, 2};

// How the losses are made: the block over a run of logits; crossEntropyMeans over logits that
// are not a run (other nodes between them), which falls back to nodes; those nodes made here.
enum class Path { Block, Fallback, Nodes };

// Each loss the mean of its rows' cross-entropies, over logits x * 1.5.
template <class T>
std::vector<Value<T>> losses(std::span<const Value<T>> x, Path path) {
  std::vector<Value<T>> logits;
  for (const Value<T>& v : x) {
    logits.push_back(v * T(1.5));
    if (path == Path::Fallback) (void)(v * T(2));  // a node between two logits
  }
  std::vector<Value<T>> out(kLosses);
  if (path != Path::Nodes) {
    crossEntropyMeans<T>(logits, kVocab, kRowsPerLoss, [](std::size_t row) { return kTargets[row]; }, std::span<Value<T>>(out));
    return out;
  }
  std::vector<Value<T>> rows(kRowsPerLoss);
  for (std::size_t s = 0; s < kLosses; ++s) {
    for (std::size_t r = 0; r < kRowsPerLoss; ++r)
      rows[r] = crossEntropy(std::span<const Value<T>>(logits).subspan((s * kRowsPerLoss + r) * kVocab, kVocab), kTargets[s * kRowsPerLoss + r]);
    out[s] = reduceMean(rows);
  }
  return out;
}

// The losses and the gradients of the leaves under the logits.
template <class T>
std::vector<T> lossesAndGradients(const std::vector<std::size_t>& chosen, Path path) {
  auto& pool = Pool<T>::local();
  pool.rewind(Mark{});
  const std::vector<double> x = inputs(kLosses * kRowsPerLoss * kVocab, 1.1);
  const NodeRange<T> leafRange = leaves<T>(x.size());
  std::vector<Value<T>> leafHandles;
  for (std::size_t k = 0; k < x.size(); ++k) {
    leafRange[k].setData(static_cast<T>(x[k]));
    leafHandles.push_back(leafRange[k]);
  }
  const std::vector<Value<T>> out = losses<T>(leafHandles, path);
  backward(weightedSum<T>(out, chosen));
  std::vector<T> got;
  for (const Value<T>& v : out) got.push_back(v.data());
  for (const Value<T>& v : leafHandles) got.push_back(v.grad());
  pool.rewind(Mark{});
  return got;
}

}  // namespace

TEST_CASE("cross-entropy block: gradients against finite differences (FP64), of both losses, of one, and of the nodes it falls back to") {
  for (const Path path : {Path::Block, Path::Fallback})
    for (const std::vector<std::size_t>& chosen : {all(kLosses), std::vector<std::size_t>{0}, std::vector<std::size_t>{1}}) {
      const std::string what = std::string(path == Path::Block ? "block" : "fallback") + ", " + std::to_string(chosen.size()) + " reached";
      EXPECT_GRADIENTS(what.c_str(), inputs(kLosses * kRowsPerLoss * kVocab, 1.1), [&](std::span<const Value<double>> x) {
        return weightedSum<double>(losses<double>(x, path), chosen);
      });
    }
}

TEST_CASE("cross-entropy block: the losses and gradients of the nodes it replaces, within FP32 rounding; its fallback, those nodes") {
  for (const std::vector<std::size_t>& chosen : {all(kLosses), std::vector<std::size_t>{1}}) {
    const std::vector<float> block = lossesAndGradients<float>(chosen, Path::Block), nodes = lossesAndGradients<float>(chosen, Path::Nodes);
    CHECK(block.size() == nodes.size());
    float largest = 0;
    for (std::size_t k = kLosses; k < nodes.size(); ++k) largest = std::max(largest, std::abs(nodes[k]));
    for (std::size_t k = 0; k < kLosses; ++k) CHECK_CLOSE(block[k], nodes[k], 1e-6);
    for (std::size_t k = kLosses; k < nodes.size(); ++k) CHECK(std::abs(block[k] - nodes[k]) <= 1e-6f * largest);
    CHECK(sameBits(lossesAndGradients<float>(chosen, Path::Fallback), nodes));
  }
}

TEST_CASE("cross-entropy block: large logits do not overflow, and its record keeps the targets and the softmax") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> x = leaves<double>(kVocab);
  for (std::size_t k = 0; k < kVocab; ++k) x[k].setData(1000.0 + static_cast<double>(k));
  std::vector<Value<double>> logits, loss(1);
  for (std::size_t k = 0; k < kVocab; ++k) logits.push_back(x[k]);
  crossEntropyMeans<double>(logits, kVocab, 1, [](std::size_t) { return std::size_t{6}; }, std::span<Value<double>>(loss));
  double expSum = 0;
  for (std::size_t k = 0; k < kVocab; ++k) expSum += std::exp(static_cast<double>(k) - 6.0);
  CHECK_CLOSE(loss[0].data(), std::log(expSum), 1e-12);
  CHECK(loss[0].op() == Op::CrossEntropyBlock);
  const Index* record = pool.links() + pool.args()[loss[0].index()].a;
  const auto ce = detail::readRecord<detail::CrossEntropyRecord<double>>(record);
  CHECK(ce.rows == 1 && ce.vocab == kVocab && ce.rowsPerLoss == 1 && ce.firstLogit == x.first && ce.firstOutput == loss[0].index());
  CHECK(detail::CrossEntropyRecord<double>::targets(record)[0] == 6);
  CHECK(reinterpret_cast<std::uintptr_t>(ce.softmax(record)) % alignof(double) == 0);
  CHECK_CLOSE(ce.softmax(record)[6], 1.0 / expSum, 1e-12);
  backward(loss[0]);
  CHECK_CLOSE(x[6].grad(), 1.0 / expSum - 1.0, 1e-12);
  CHECK_CLOSE(x[0].grad(), std::exp(-6.0) / expSum, 1e-12);
  pool.rewind(Mark{});
}

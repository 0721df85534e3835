// The tiny and small graphs (paper Figures 1 and 2), written as the paper's BurTorch listing
// writes them: constants are leaves, so the graphs have 10 and 32 nodes.
#pragma once

#include <array>
#include <string_view>

#include "burtorch/burtorch.hpp"
#include "cli.hpp"

namespace burtorch::driver {

struct TinyGraph {
  static constexpr std::string_view kName = "tiny";
  static constexpr std::array<Param, 2> kDefaults{{{"a", -41.0}, {"b", 2.0}}};

  template <class T>
  static Value<T> build(Value<T> a, Value<T> b) noexcept {
    const auto f = squared(a, b);
    return f / Value<T>(2.0);
  }

  // The authors' program halves with a product by a constant 0.5 node (the same 10 nodes, the
  // same values and gradients).
  template <class T>
  static Value<T> buildAsAuthors(Value<T> a, Value<T> b) noexcept {
    const auto f = squared(a, b);
    return f * Value<T>(0.5);
  }

  // The authors' program times three loops and the paper does not say which it printed; we
  // take the one with pre-allocated scratch, the loop the burtorch-authors engine reports
  // (engines/authors/output.py), so that both rows time the same loop.
  static constexpr bool kAuthorsPreallocateScratch = true;

 private:
  template <class T>
  BURTORCH_INLINE static Value<T> squared(Value<T> a, Value<T> b) noexcept {
    const auto c = a + b;
    const auto d = a * b + pow3(b);
    const auto e = c - d;
    return sqr(e);
  }
};

struct SmallGraph {
  static constexpr std::string_view kName = "small";
  static constexpr std::array<Param, 2> kDefaults{{{"a", -4.0}, {"b", 2.0}}};

  // The final value of each of the graph's variables after a and b (`+=` rebinds them).
  template <class T>
  struct Variables {
    Value<T> c, d, e, f, g;
  };

  template <class T>
  BURTORCH_INLINE static Variables<T> variables(Value<T> a, Value<T> b) noexcept {
    auto c = a + b;
    auto d = a * b + pow3(b);
    c += c + Value<T>(1.0);
    c += Value<T>(1.0) + c - a;
    d += d * Value<T>(2.0) + relu(b + a);
    d += Value<T>(3.0) * d + relu(b - a);
    const auto e = c - d;
    const auto f = sqr(e);
    auto g = f / Value<T>(2.0);
    g += Value<T>(10.0) / f;
    return {c, d, e, f, g};
  }

  template <class T>
  static Value<T> build(Value<T> a, Value<T> b) noexcept {
    return variables(a, b).g;
  }

  // The authors' small program builds this same graph and calls plain backward(g).
  template <class T>
  static Value<T> buildAsAuthors(Value<T> a, Value<T> b) noexcept {
    return build(a, b);
  }
  static constexpr bool kAuthorsPreallocateScratch = false;
};

// --timing lean: the leaves a and b are made once and persist, as the inputs of the Python
// engines do. Each step drops the previous graph (rewind), zeroes the leaves' gradients,
// rebuilds every other node of the graph and backpropagates.
template <class Graph>
class ScalarGraphWorkload {
 public:
  using T = double;
  static constexpr std::string_view kName = Graph::kName;
  static constexpr std::string_view kPrecision = "fp64";
  static constexpr auto kDefaults = Graph::kDefaults;

  explicit ScalarGraphWorkload(std::span<const Param> params, const Options& = {})
      : pool_(Pool<T>::local()), a_(params[0].value), b_(params[1].value), mark_(pool_.mark()) {}

  BURTORCH_INLINE void operator()() noexcept {
    pool_.rewind(mark_);
    zeroGrad(a_, b_);
    g_ = Graph::build(a_, b_);
    backwardWithScratch(g_, scratch_);
  }

  std::array<Param, 3> outputs() const noexcept {
    return {{{"g", g_.data()}, {"dg_da", a_.grad()}, {"dg_db", b_.grad()}}};
  }

 private:
  Pool<T>& pool_;
  Value<T> a_, b_;
  Mark mark_;
  BackwardScratch scratch_;
  Value<T> g_;
};

// --timing paper: the loop of the authors' programs, where a and b are new nodes every step.
// Each step drops the previous graph and its leaves (rewind to a mark taken before them), makes
// a and b anew (their gradients start at zero), builds the graph as the authors write it and
// backpropagates as they do: with the workload's own scratch, or with backward()'s scratch
// kept per thread where the authors call plain backward().
template <class Graph>
class AuthorsScalarGraphWorkload {
 public:
  using T = double;
  static constexpr std::string_view kName = Graph::kName;
  static constexpr std::string_view kPrecision = "fp64";
  static constexpr auto kDefaults = Graph::kDefaults;

  explicit AuthorsScalarGraphWorkload(std::span<const Param> params, const Options& = {})
      : pool_(Pool<T>::local()), mark_(pool_.mark()), aData_(params[0].value), bData_(params[1].value) {}

  BURTORCH_INLINE void operator()() noexcept {
    pool_.rewind(mark_);
    a_ = Value<T>(aData_);
    b_ = Value<T>(bData_);
    g_ = Graph::buildAsAuthors(a_, b_);
    if constexpr (Graph::kAuthorsPreallocateScratch) backwardWithScratch(g_, scratch_);
    else backward(g_);
  }

  std::array<Param, 3> outputs() const noexcept {
    return {{{"g", g_.data()}, {"dg_da", a_.grad()}, {"dg_db", b_.grad()}}};
  }

 private:
  Pool<T>& pool_;
  Mark mark_;
  T aData_, bData_;
  BackwardScratch scratch_;
  Value<T> a_, b_, g_;
};

}  // namespace burtorch::driver

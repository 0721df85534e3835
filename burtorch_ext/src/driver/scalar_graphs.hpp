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
    const auto c = a + b;
    const auto d = a * b + pow3(b);
    const auto e = c - d;
    const auto f = sqr(e);
    return f / Value<T>(2.0);
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
};

// The leaves a and b are made once and persist, as the inputs of the Python engines do. Each
// step drops the previous graph (rewind), zeroes the leaves' gradients, rebuilds every other
// node of the graph and backpropagates.
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

}  // namespace burtorch::driver

// Reverse mode. Operands are always created before their users, so visiting nodes from the root
// down by index is a reverse topological order: no recursion, no explicit sort. A flag per node
// in caller-owned scratch says which nodes the root reaches; nodes it does not reach (another
// graph, stale gradients) are skipped. The flags are cleared as they are consumed (see
// BackwardScratch for the leaves'), so the scratch is reused from step to step and a
// steady-state backward allocates nothing.
//
// The sweep stops at the pool's leading leaves (the parameters): a leaf passes nothing on, so a
// model's million weights get their gradients without being visited one by one.
//
// The scalar operators' derivatives are here; the n-ary operators and the fused layers keep
// theirs next to their forward, with the record they read (reductions.hpp, inner_product.hpp,
// linear.hpp, layer_norm.hpp, attention.hpp, add_block.hpp, loss.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>

#include "burtorch/add_block.hpp"
#include "burtorch/attention.hpp"
#include "burtorch/inner_product.hpp"
#include "burtorch/layer_norm.hpp"
#include "burtorch/linear.hpp"
#include "burtorch/loss.hpp"
#include "burtorch/reductions.hpp"
#include "burtorch/scalar_ops.hpp"
#include "burtorch/sweep.hpp"

namespace burtorch {

class BackwardScratch {
 public:
  // Room for flags of `nodes` nodes, all clear from `floor` up; grows (allocates) only when the
  // pool has grown.
  bool* fit(std::size_t nodes, std::size_t floor) {
    if (size_ < nodes) {
      const std::size_t n = std::max(nodes, 2 * size_);
      reached_.reset(new bool[n]());
      size_ = n;
      staleLow_ = staleEnd_ = 0;
    }
    if (floor < staleEnd_) {  // the leading leaves shrank: those nodes may become operators
      std::fill(reached_.get() + staleLow_, reached_.get() + staleEnd_, false);
      staleLow_ = staleEnd_ = 0;
    }
    return reached_.get();
  }

  // A sweep that stopped at `floor` may have left flags on leaves in [low, floor).
  void leftFlags(std::size_t low, std::size_t floor) noexcept {
    if (low >= floor) return;
    staleLow_ = staleEnd_ == 0 ? low : std::min(staleLow_, low);
    staleEnd_ = std::max(staleEnd_, floor);
  }

  std::size_t size() const noexcept { return size_; }

 private:
  // bool, not a byte type: a store to a byte could alias a gradient, and the compiler would
  // reload the gradients after every flag it sets. All false between calls, except on leading
  // leaves in [staleLow_, staleEnd_), which no sweep visits while they stay leading leaves.
  std::unique_ptr<bool[]> reached_;
  std::size_t size_ = 0;
  std::size_t staleLow_ = 0, staleEnd_ = 0;
};

namespace detail {

// Continues the sweep below a block (see Resume).
template <class T>
BURTORCH_INLINE void continueBelow(Sweep<T>& s, Index& i, Resume r) noexcept {
  s.low = r.low;
  i = r.first;
}

// Every case multiplies the incoming gradient once by a local derivative computed from values
// alone: the values are ready long before the gradient arrives, so only that one multiply
// (and the accumulation) lies on the chain from the root down. A block's backward, run at i,
// moves i to the block's first output.
template <class T>
BURTORCH_INLINE void propagate(Sweep<T>& s, Op op, Index& i, Args args, T gi) noexcept {
  const T* v = s.v;
  const Index a = args.a, b = args.b;
  switch (op) {
    case Op::Leaf: break;
    case Op::Relu: s.add(a, activationGradient(Activation::Relu, v[i], gi)); break;
    case Op::Tanh: s.add(a, activationGradient(Activation::Tanh, v[i], gi)); break;
    case Op::Exp: s.add(a, gi * v[i]); break;
    case Op::NegLog: s.add(a, gi * (T(-1) / v[a])); break;
    case Op::Sigmoid: s.add(a, activationGradient(Activation::Sigmoid, v[i], gi)); break;
    case Op::Inv: s.add(a, gi * (-v[i] * v[i])); break;
    case Op::Sqr: s.add(a, gi * (T(2) * v[a])); break;
    case Op::Pow3: s.add(a, gi * (T(3) * v[a] * v[a])); break;
    case Op::Log: s.add(a, gi * (T(1) / v[a])); break;
    case Op::Sqrt: s.add(a, gi * (T(0.5) / v[i])); break;
    case Op::InvSqrt: s.add(a, gi * (T(-0.5) * v[i] * v[i] * v[i])); break;
    case Op::Neg: s.add(a, -gi); break;
    case Op::MulConst: s.add(a, gi * readRecord<T>(s.links + b)); break;
    case Op::AddConst: s.add(a, gi); break;
    case Op::PowConst: {
      const T c = readRecord<T>(s.links + b);
      s.add(a, gi * (c * std::pow(v[a], c - T(1))));
      break;
    }
    case Op::Add: s.add(a, gi); s.add(b, gi); break;
    case Op::Sub: s.add(a, gi); s.add(b, -gi); break;
    case Op::Mul: {
      const T va = v[a], vb = v[b];
      s.add(a, gi * vb);
      s.add(b, gi * va);
      break;
    }
    case Op::Div: {
      const T reciprocal = T(1) / v[b];
      s.add(a, gi * reciprocal);
      s.add(b, gi * (-v[i] * reciprocal));
      break;
    }
    case Op::Mean: s.add(a, gi * T(0.5)); s.add(b, gi * T(0.5)); break;
    case Op::AddSquares: {
      const T da = T(2) * v[a], db = T(2) * v[b];
      s.add(a, gi * da);
      s.add(b, gi * db);
      break;
    }
    case Op::MeanSquares: {
      const T va = v[a], vb = v[b];
      s.add(a, gi * va);
      s.add(b, gi * vb);
      break;
    }
    case Op::NegMean: s.add(a, gi * T(-0.5)); s.add(b, gi * T(-0.5)); break;
    case Op::ReduceMul: s.low = reduceMulBackward(s.reached, s.low, s.floor, a, b, gi); break;
    case Op::ReduceSum:
    case Op::ReduceSub:
    case Op::ReduceMean:
    case Op::ReduceSumOfSquares:
    case Op::ReduceMeanSquares:
    case Op::ReduceNegMean:
    case Op::LogSumExp: s.low = reduceBackward(s.reached, s.low, s.floor, op, i, a, b, gi); break;
    case Op::InnerProduct:
    case Op::InnerProductWithBias: s.low = innerProductBackward(s.reached, s.low, s.floor, a, b, gi); break;
    case Op::LinearRow: continueBelow(s, i, linearRowBackward<T>(s.reached, s.low, s.floor, i, b)); break;
    case Op::LayerNormRow: continueBelow(s, i, layerNormRowBackward<T>(s.reached, s.low, s.floor, i, a, b)); break;
    case Op::AttentionRow: continueBelow(s, i, attentionRowBackward<T>(s.reached, s.low, s.floor, i, a)); break;
    case Op::AddBlock: continueBelow(s, i, addBlockBackward<T>(s.reached, s.low, s.floor, i, a)); break;
    case Op::CrossEntropyBlock: continueBelow(s, i, crossEntropyBackward<T>(s.reached, s.low, s.floor, i, a)); break;
    default: BURTORCH_UNREACHABLE();  // every Op is handled above
  }
}

}  // namespace detail

// Adds d(root)/d(node) to the gradient of every node the root reaches, using caller-owned
// scratch. As in micrograd, the root's own gradient is set to 1 and every other one accumulates:
// parameters keep summing over steps until zeroGrad().
template <class T>
void backwardWithScratch(Value<T> root, BackwardScratch& scratch) noexcept {
  Pool<T>& pool = Pool<T>::local();
  const Index r = root.index();
  BURTORCH_ASSERT(r < pool.size());
  const auto floor = static_cast<Index>(pool.leadingLeaves());
  detail::Sweep<T> s{pool.grads(), pool.values(), pool.links(), scratch.fit(pool.capacity(), floor), r, floor};
  const Op* ops = pool.ops();
  const Args* args = pool.args();
  s.g[r] = T(1);
  s.reached[r] = true;
  for (Index i = r;; --i) {
    if (s.reached[i]) {
      s.reached[i] = false;
      detail::propagate(s, ops[i], i, args[i], s.g[i]);
    }
    if ((i == s.low) | (i == floor)) break;
  }
  scratch.leftFlags(s.low, floor);
}

// The same with scratch kept per thread, for when memory control does not matter.
template <class T>
void backward(Value<T> root) noexcept {
  static thread_local BackwardScratch scratch BURTORCH_INITIAL_EXEC;
  backwardWithScratch(root, scratch);
}

}  // namespace burtorch

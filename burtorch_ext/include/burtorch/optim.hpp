// Plain SGD over a run of parameters, fused with zeroing their gradients: one pass over
// contiguous values and gradients, which the compiler vectorises. Or, for a layer's weights,
// inside the backward sweep where their gradients become final (SgdInBackward).
#pragma once

#include <algorithm>
#include <vector>

#include "burtorch/kernels.hpp"
#include "burtorch/scalar_ops.hpp"

namespace burtorch {

// p <- p - step * dp, then dp <- 0, for every parameter of the range.
template <class T>
void sgdStepAndZeroGrad(NodeRange<T> params, ScalarOf<T> step) noexcept {
  Pool<T>& pool = Pool<T>::local();
  BURTORCH_ASSERT(params.first + params.count <= pool.size());
  T* BURTORCH_RESTRICT v = pool.values() + params.first;
  T* BURTORCH_RESTRICT g = pool.grads() + params.first;
  for (std::size_t k = 0; k < params.count; ++k) {
    v[k] -= step * g[k];
    g[k] = T(0);
  }
}

// The same step taken by the backward sweep itself, where a layer's product of its weights'
// gradients (linear_block_backward.hpp) writes them, or where a layer over one token computes its
// input's gradient (linear_backward.hpp: the weights' gradients never written at all): the
// weights are updated while in cache, not in a pass of their own over megabytes after the sweep.
// Same bits as sgdStepAndZeroGrad after the sweep. Whoever opens it promises that nothing the
// sweep visits after a layer adds to that layer's weights' gradients (no weight shared with a
// later node), as in a step's last graph of the MLP or the GPT; then stepRest() steps the
// parameters that the sweep did not.
template <class T>
class SgdInBackward {
 public:
  static SgdInBackward& local() noexcept {
    static thread_local SgdInBackward sgd BURTORCH_INITIAL_EXEC;
    return sgd;
  }

  // gradientsAreZero: the parameters' gradients are zero until the sweep's products (a batch
  // in one graph), so those products need not read them, nor zero them again.
  void open(ScalarOf<T> step, bool gradientsAreZero) noexcept {
    step_ = step;
    zeros_ = gradientsAreZero;
    open_ = true;
  }
  bool isOpen() const noexcept { return open_; }
  bool gradientsAreZero() const noexcept { return zeros_; }
  ScalarOf<T> step() const noexcept { return step_; }
  void stepped(NodeRange<T> range) { stepped_.push_back(range); }

  // Closes it, and steps the parameters of `params` outside the ranges the sweep stepped.
  void stepRest(NodeRange<T> params, ScalarOf<T> step) noexcept {
    open_ = false;
    std::sort(stepped_.begin(), stepped_.end(), [](NodeRange<T> a, NodeRange<T> b) { return a.first < b.first; });
    Index from = params.first;
    for (const NodeRange<T> done : stepped_) {
      sgdStepAndZeroGrad(NodeRange<T>{from, done.first - from}, step);
      from = done.first + done.count;
    }
    sgdStepAndZeroGrad(NodeRange<T>{from, params.first + params.count - from}, step);
    stepped_.clear();
  }

 private:
  ScalarOf<T> step_ = 0;
  bool zeros_ = false, open_ = false;
  std::vector<NodeRange<T>> stepped_;
};

}  // namespace burtorch

// Plain SGD over a run of parameters, fused with zeroing their gradients: one pass over
// contiguous values and gradients, which the compiler vectorises.
#pragma once

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

}  // namespace burtorch

// Loops over contiguous arrays of values and gradients, the inner products of a layer's
// neurons. They are written so that the compiler vectorises them without -ffast-math: the dot
// product keeps independent partial sums in lanes (one vector register's worth per group of
// lanes) and adds the lanes in a fixed order, so the result does not depend on the vector width
// the build targets.
#pragma once

#include <cstddef>

#include "burtorch/config.hpp"

#if defined(_MSC_VER) && !defined(__clang__)
#define BURTORCH_RESTRICT __restrict
#else
#define BURTORCH_RESTRICT __restrict__
#endif

namespace burtorch::kernels {

namespace detail {

// lanes[l] += lanes[l + width] for l < width: halves the partial sums, as vector adds.
template <std::size_t width, class T>
BURTORCH_INLINE void fold(T* lanes) noexcept {
  for (std::size_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
}

}  // namespace detail

// sum_k x[k] * y[k]
template <class T>
BURTORCH_INLINE T dot(const T* BURTORCH_RESTRICT x, const T* BURTORCH_RESTRICT y, std::size_t n) noexcept {
  constexpr std::size_t kLanes = 64 / sizeof(T);  // one cache line of each operand per round
  constexpr std::size_t kShort = 16 / sizeof(T);  // one SSE/NEON register: short rows and tails
  T lanes[kLanes] = {};
  std::size_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) lanes[l] += x[k + l] * y[k + l];
  for (; k + kShort <= n; k += kShort)
    for (std::size_t l = 0; l < kShort; ++l) lanes[l] += x[k + l] * y[k + l];
  T tail = 0;
  for (; k < n; ++k) tail += x[k] * y[k];
  // Fixed widths, so that the compiler unrolls the folds and keeps the lanes in registers.
  if constexpr (kLanes >= 16) detail::fold<kLanes / 2>(lanes);
  if constexpr (kLanes >= 8) detail::fold<4>(lanes);
  if constexpr (kLanes >= 4) detail::fold<2>(lanes);
  return (lanes[0] + lanes[1]) + tail;
}

// y[k] += a * x[k], a register's worth at a time, so that short rows need no vector prologue.
template <class T>
BURTORCH_INLINE void axpy(T* BURTORCH_RESTRICT y, T a, const T* BURTORCH_RESTRICT x, std::size_t n) noexcept {
  constexpr std::size_t kShort = 16 / sizeof(T);
  std::size_t k = 0;
  for (; k + kShort <= n; k += kShort)
    for (std::size_t l = 0; l < kShort; ++l) y[k + l] += a * x[k + l];
  for (; k < n; ++k) y[k] += a * x[k];
}

}  // namespace burtorch::kernels
